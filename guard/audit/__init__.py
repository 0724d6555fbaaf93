"""`keyguard audit`: a compacted topic's health from its bytes.

`guard.audit.state` folds records into per-partition states that merge (pure);
`guard.audit.judge` turns a merged state and the topic's facts into findings and numbers
(pure); `guard.audit.scan` is the edge: it reads the topic up to the end offsets captured at
start, its configuration and the registry's subjects, and calls both. The library entry
point is `guard.audit.scan.audit_topic`; the Spark form is `sparkio.audit`.
"""
