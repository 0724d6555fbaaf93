"""The rules beyond the key analysis (guard/keys): what the check itself knows about the
subject and the topic's keys (KG01x), value compatibility (KG8xx) and the audit of a topic's
bytes (KG95x). `keyguard.guard.rules` holds them in its registry beside the key rules; its
docstring says how rules are declared and numbered.
"""

from __future__ import annotations

from keyguard.guard.report import ANY_FAMILY, Category, Framing, Rule, Severity

# --- KG0xx: what the check itself knows ---------------------------------------------

KEY_FIRST_VERSION = Rule(
    id="KG011",
    name="key-first-version",
    category=Category.KEY_BYTES,
    severity=Severity.INFO,
    summary="No key schema is registered yet: no existing key can be orphaned by the schema.",
    why="A topic whose key subject has no versions holds no keys written under a registered "
    "schema; the candidate becomes version 1.",
    checks=("keyguard.guard.judge._key_findings",),
)

KEYS_ASSUMED_LATEST = Rule(
    id="KG012",
    name="key-ids-assumed-latest",
    category=Category.KEY_BYTES,
    severity=Severity.INFO,
    summary="Without topic access, the keys are assumed to carry the latest key schema id.",
    why="The schema ids inside avro-confluent keys are facts of the topic, not the registry. "
    "Give the bootstrap servers so keyguard scans the topic and finds the ids the keys "
    "really carry; a producer may still be writing an older version.",
    checks=("keyguard.guard.judge._key_findings",),
)

REAL_KEY_CHANGES = Rule(
    id="KG013",
    name="topic-key-not-reproduced",
    category=Category.KEY_BYTES,
    severity=Severity.BREAKING,
    summary="A key read from the topic does not encode to the same bytes under the candidate.",
    why="keyguard decodes keys sampled from the topic with the candidate key schema and encodes "
    "them again. A key that comes back different (or cannot be decoded or encoded at all) is a "
    "key the new producer will never write again: its record is never overwritten or deleted. "
    "This is evidence from the data, independent of what the registry says the keys are.",
    example_old='topic key {"b":"B1","a":1}',
    example_new="candidate key columns (a, b): re-encoded as {\"a\":1,\"b\":\"B1\"}",
    checks=("keyguard.guard.realkeys.real_key_findings",),
)

REAL_KEY_MISPLACED = Rule(
    id="KG014",
    name="topic-keys-not-murmur2",
    category=Category.KEY_PLACEMENT,
    severity=Severity.BREAKING,
    summary="Keys in the topic sit on partitions murmur2 would not choose.",
    why="Flink, the Java client and keyguard place a key on murmur2(key bytes) mod partitions. "
    "Keys found elsewhere were written by another partitioner (librdkafka's default is "
    "consistent_random, a CRC32) or before partitions were added. A murmur2 producer writes the "
    "same key to another partition, so compaction never folds the two records and reads that "
    "fold per partition see both.",
    example_old="librdkafka producer, partitioner=consistent_random",
    example_new="Flink upsert-kafka or keyguard (murmur2)",
    checks=("keyguard.guard.realkeys.real_key_findings",),
)

SUBJECT_MISSING = Rule(
    id="KG015",
    name="subject-missing",
    category=Category.TOPIC,
    severity=Severity.BREAKING,
    summary="The subject has no versions, and the check demands that it exists "
    "(--require-subject).",
    why="A gate that knows the topic is already in production must not read a missing subject "
    "as a first registration: a typo in the topic name, a wrong subject name strategy or the "
    "wrong registry all look like an empty subject, and would let any schema pass.",
    example_old="--topic pagevews (a typo) --require-subject",
    example_new="pageviews-key exists in the registry",
    checks=("keyguard.guard.judge._subject_missing",),
)

KEYS_UNLISTED_ID = Rule(
    id="KG016",
    name="topic-keys-unlisted-schema-id",
    category=Category.KEY_BYTES,
    severity=Severity.WARNING,
    summary="Keys in the topic carry a schema id that the key subject does not list.",
    why="An avro-confluent key carries its schema id in its bytes. An id the subject does not "
    "list was written by another producer (another subject name strategy, another registry) "
    "or under a version that was deleted since. The candidate never writes that id: those "
    "keys are distinct Kafka keys from the ones it writes, and stay orphaned.",
    example_old="key bytes 00 00 06 7a 81 ... (id 424577, not in orders-key)",
    example_new="orders-key v1 (id 100017)",
    families=ANY_FAMILY, framing=Framing.SCHEMA_ID,
    checks=("keyguard.guard.judge._id_findings",),
)

# --- KG8xx: value compatibility -----------------------------------------------------

VALUE_INCOMPATIBLE = Rule(
    id="KG801",
    name="value-incompatible",
    category=Category.VALUE_COMPATIBILITY,
    severity=Severity.BREAKING,
    summary="The value schema breaks the subject's compatibility level.",
    why=(
        "Consumers resolve each value with the schema it was written with and the schema they "
        "read with. A change the subject's level forbids (BACKWARD: new readers must read old "
        "data; FORWARD: old readers must read new data; FULL: both; *_TRANSITIVE: against every "
        "version) fails at the registry on register, or, with auto-register off, in consumers."
    ),
    example_old='{"name": "pv", "type": "long"}',
    example_new='{"name": "pv", "type": "int"}   (BACKWARD: long data cannot be read as int)',
    checks=("keyguard.guard.values.judge_value",),
)

REGISTRY_DISAGREES = Rule(
    id="KG802",
    name="registry-disagrees",
    category=Category.VALUE_COMPATIBILITY,
    severity=Severity.WARNING,
    summary="The registry's own compatibility check disagrees with keyguard's.",
    why=(
        "keyguard checks with Confluent Schema Registry's semantics, and asks an HTTP registry "
        "too. Registries differ at the edges (Karapace, Redpanda, Apicurio), so when the two "
        "answers differ, the registry decides what it will accept on register: look at both "
        "messages before deploying."
    ),
    checks=("keyguard.guard.values.judge_value",),
)

VALUE_FIRST_VERSION = Rule(
    id="KG803",
    name="value-first-version",
    category=Category.VALUE_COMPATIBILITY,
    severity=Severity.INFO,
    summary="The value subject has no registered version yet: nothing to be compatible with.",
    why="The first version of a subject is compatible by definition.",
    checks=("keyguard.guard.values.judge_value",),
)

VALUE_FRAMING_CHANGED = Rule(
    id="KG804",
    name="value-framing-changed",
    category=Category.VALUE_COMPATIBILITY,
    severity=Severity.BREAKING,
    summary="The value's framing changed: readers of the old framing may not read the new one.",
    why=(
        "Values are not keys: no record is orphaned, compaction is untouched. But every reader "
        "finds the schema id where its deserializer looks: a value whose id moves into a header "
        "has the bare body as its bytes, which readers that read only the prefix (Flink's "
        "avro-confluent and json-registry formats, serializers without header support) cannot "
        "read; Apicurio's ids are not Confluent's. Header-aware readers (Confluent's dual "
        "deserializers, Apicurio's) read a prefix as well, so a move back to the prefix only "
        "warns."
    ),
    example_old="'value.avro-confluent.framing' = 'confluent'",
    example_new="'value.avro-confluent.framing' = 'confluent-header'",
    checks=("keyguard.guard.values.framing_findings",),
)

# --- KG95x: the audit (`keyguard audit`): what a topic's bytes show -------------------

PHANTOM_KEY = Rule(
    id="KG951",
    name="phantom-key",
    category=Category.AUDIT,
    severity=Severity.BREAKING,
    summary="A logical key is live in the topic under two or more byte encodings.",
    why="The key's columns decode to equal values, but its records carry different key bytes "
    "(another schema id, another field order, another format option). Compaction and every "
    "consumer see distinct keys: the older encoding is never overwritten or deleted, so the "
    "table holds a phantom row, and deletes written under the new encoding miss it. "
    "`keyguard migrate` rewrites the live rows under one encoding and tombstones the others.",
    example_old='key 00 00 00 00 01 02 (id 1) {"id": 1}, live',
    example_new='key 00 00 00 00 02 02 (id 2) {"id": 1}, live',
    checks=("keyguard.guard.audit.judge.phantom_findings",),
)

MISSED_DELETE = Rule(
    id="KG957",
    name="missed-delete",
    category=Category.AUDIT,
    severity=Severity.BREAKING,
    summary="A row was deleted under one key encoding and stays live under another.",
    why="A tombstone deletes exact key bytes. When a row is live under one encoding (another "
    "field order, schema id, framing or partition) and a later tombstone was written under "
    "another, the delete missed it: every consumer still sees the row. Tombstones "
    "`keyguard migrate` writes to retire an old encoding carry a header and are not counted.",
    example_old='key {"a":1,"b":2}, live',
    example_new='key {"b":2,"a":1}, tombstone written later',
    checks=("keyguard.guard.audit.judge.missed_delete_findings",),
)

MISPLACED_KEY = Rule(
    id="KG952",
    name="misplaced-key",
    category=Category.AUDIT,
    severity=Severity.BREAKING,
    summary="Live keys sit on a partition murmur2 does not pick for their key bytes.",
    why="Flink, the Java client and keyguard write a key to murmur2(key bytes) mod partitions. "
    "A record elsewhere was written by another partitioner (librdkafka's default is "
    "consistent_random, a CRC32) or before partitions were added: the next murmur2 write of "
    "that key goes to another partition, compaction never folds the two, and a delete misses. "
    "A misplaced record whose key was deleted beside it is only counted: compaction removes "
    "both.",
    example_old="librdkafka producer, partitioner=consistent_random",
    example_new="Flink upsert-kafka (murmur2)",
    checks=("keyguard.guard.audit.judge.misplaced_findings",),
)

UNDECODABLE_RECORD = Rule(
    id="KG953",
    name="undecodable-record",
    category=Category.AUDIT,
    severity=Severity.WARNING,
    summary="Keys or values in the topic do not decode under the declared formats.",
    why="A record the declared key or value format cannot read was written by another producer "
    "or format, or is corrupt. Flink's upsert-kafka source fails on it (or skips it with "
    "ignore-parse-errors), so readers of the table disagree about what it holds.",
    example_old="key.format=json",
    example_new="a key written as avro bytes",
    checks=("keyguard.guard.audit.judge.record_findings",),
)

NULL_KEY = Rule(
    id="KG954",
    name="null-key",
    category=Category.AUDIT,
    severity=Severity.WARNING,
    summary="Records in a compacted topic have no key.",
    why="Compaction rejects (or drops) records without a key, and Flink's upsert-kafka source "
    "drops them: their values never reach the table.",
    example_old="producer.produce(topic, key=None, value=...)",
    example_new="every record keyed by its primary key",
    checks=("keyguard.guard.audit.judge.record_findings",),
)

COMPACTION_DEFEATED = Rule(
    id="KG955",
    name="compaction-config",
    category=Category.AUDIT,
    severity=Severity.WARNING,
    summary="A topic setting keeps compaction from folding the topic to its live keys.",
    why="An upsert topic relies on compaction: cleanup.policy without compact never folds "
    "(and delete retention drops live keys), a long min.compaction.lag.ms or large segments "
    "keep superseded records for that long, and a short delete.retention.ms removes tombstones "
    "before lagging consumers read them, so their deletes are missed.",
    example_old="cleanup.policy=delete",
    example_new="cleanup.policy=compact",
    checks=("keyguard.guard.audit.judge.config_findings",),
)

MIXED_FRAMING = Rule(
    id="KG958",
    name="mixed-framing",
    category=Category.AUDIT,
    severity=Severity.BREAKING,
    summary="Live keys or values carry their schema id in two framings: producers disagree.",
    why="Confluent's serializers put the schema id in the bytes (magic byte 0 and the id; "
    "magic byte 1 and a GUID) or, with header_schema_id_serializer, the schema GUID in the "
    "record header __key_schema_id / __value_schema_id and the bare body in the bytes. When "
    "producers of one topic disagree, a prefix-only reader (Flink's avro-confluent, a "
    "deserializer without dual_schema_id_deserializer) cannot read the header-framed records, "
    "and for keys a header-framed key and a prefix-framed key of one logical key are two keys "
    "to compaction: phantom rows, updates and deletes under one framing miss the other. "
    "`keyguard migrate` with --new-option key.<format>.framing=... rewrites the live rows "
    "under one framing.",
    example_old="key 00 00 00 00 07 02 (id 7 in the bytes)",
    example_new="key 02, header __key_schema_id = 01 + the schema GUID",
    checks=("keyguard.guard.audit.judge.framing_findings",),
)

AUDIT_UNLISTED_ID = Rule(
    id="KG956",
    name="audit-unlisted-schema-id",
    category=Category.AUDIT,
    severity=Severity.WARNING,
    summary="Records carry a schema id that their subject does not list.",
    why="A framed record (avro-confluent) carries its schema id. An id the subject does not "
    "list was written by another producer (subject name strategy, registry) or under a "
    "deleted version; the declared writer never writes it, so those keys are distinct keys.",
    example_old="key id 424577, not in orders-key",
    example_new="orders-key v1 (id 100017)",
    checks=("keyguard.guard.audit.judge.id_findings",),
)
