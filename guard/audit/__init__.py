"""`keyguard audit`: a compacted topic's health from its bytes.

`keyguard.guard.audit.state` folds records into per-partition states that merge (pure);
`keyguard.guard.audit.judge` turns a merged state and the topic's facts into findings and numbers
(pure); `keyguard.guard.audit.scan` is the edge: it reads the topic up to the end offsets captured
at start, its configuration and the registry's subjects, and calls both. The library entry
point is `keyguard.guard.audit.scan.audit_topic`; the Spark form is `sparkio.audit`.
"""
