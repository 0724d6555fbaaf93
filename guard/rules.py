"""The one registry of rules: every finding the guard can report, as data (like ruff's and buf's).

Each rule is a constant here, or for the rules beyond the key analysis in
`keyguard.guard.rules_beyond_keys` (ID, name, category, severity, why, example, the key
families it judges), bound to the checks that emit it (`Rule.checks`, dotted function names;
tests/guard/test_rules_registry.py proves each named function emits the rule and no other
function does). Code names a rule by its constant (`Change(KEY_FIELD_ADDED, ...)`), never by
its ID as a string.

IDs are stable: users select and ignore rules by ID or category, reports and CI annotations
cite them. Ranges: KG0xx what the check itself knows, KG1xx key fields, KG2xx column types,
KG3xx format options, KG4xx binary encodings (Avro KG40x, Protobuf KG42x), KG5xx
Confluent schema ids, KG6xx key placement, KG7xx topic settings, KG8xx value compatibility,
KG9xx safe changes explained (INFO; Protobuf KG94x), KG95x the audit of a topic's bytes. A new
rule takes a new ID; an ID is never reused. A rule that is renamed or merged into another keeps
its old ID working through `ALIASES`.
"""

from __future__ import annotations

from keyguard.guard.report import ANY_FAMILY, Category, Framing, Rule, Severity
from keyguard.guard.rules_beyond_keys import (
    AUDIT_UNLISTED_ID,
    COMPACTION_DEFEATED,
    KEY_FIRST_VERSION,
    KEYS_ASSUMED_LATEST,
    KEYS_UNLISTED_ID,
    MISPLACED_KEY,
    MISSED_DELETE,
    MIXED_FRAMING,
    NULL_KEY,
    PHANTOM_KEY,
    REAL_KEY_CHANGES,
    REAL_KEY_MISPLACED,
    REGISTRY_DISAGREES,
    SUBJECT_MISSING,
    UNDECODABLE_RECORD,
    VALUE_FIRST_VERSION,
    VALUE_FRAMING_CHANGED,
    VALUE_INCOMPATIBLE,
)

_B, _W, _I = Severity.BREAKING, Severity.WARNING, Severity.INFO
_BYTES, _PLACE, _TOPIC = Category.KEY_BYTES, Category.KEY_PLACEMENT, Category.TOPIC
#: The text key families (guard/keys/text.py judges both).
_TEXT = ("json", "csv")
_ORPHAN = (
    " Compaction, partitioning and every consumer identify a key by its exact bytes, so the"
    " records already in the topic are never overwritten or deleted by the new writes:"
    " phantom rows stay, deletes miss."
)


def _checks(*names: str) -> tuple[str, ...]:
    """The functions (under guard/) that emit a rule."""
    return tuple(f"keyguard.guard.{n}" for n in names)


KEY_BYTES_DIFFER = Rule(
    "KG000", "key-bytes-differ", _BYTES, _B,
    "An existing key encodes to different bytes under the new key schema.",
    "The structural rules found no reason, but encoding a representative key with the old"
    " and the new codec gave different bytes (or the new one could not encode it). The"
    " guard reports it rather than stay silent; please report it as a keyguard bug too."
    + _ORPHAN,
    families=ANY_FAMILY,
    checks=_checks("keys.analyze.analyze_key_change"),
)

# --- KG1xx: key fields --------------------------------------------------------------

KEY_FIELD_ADDED = Rule(
    "KG101", "key-field-added", _BYTES, _B,
    "A field was added to the key.",
    "Every existing key lacks the new field, so the new writer emits different bytes for"
    " the same entity (a new field, a new column, a null, or a union branch)." + _ORPHAN,
    "id BIGINT", "id BIGINT, region STRING", families=(*_TEXT, "avro", "protobuf"),
    checks=_checks("keys.text.fields_changes", "keys.avro.AvroWalk._record",
                   "keys.protobuf.ProtoWalk._added"),
)

KEY_FIELD_REMOVED = Rule(
    "KG102", "key-field-removed", _BYTES, _B,
    "A field was removed from the key.",
    "The bytes of every existing key held the removed field; the new writer leaves it out,"
    " and keys that differed only in that field now collapse into one." + _ORPHAN,
    "id BIGINT, region STRING", "id BIGINT", families=(*_TEXT, "avro"),
    checks=_checks("keys.text.fields_changes", "keys.avro.AvroWalk._record"),
)

KEY_FIELDS_REORDERED = Rule(
    "KG103", "key-fields-reordered", _BYTES, _B,
    "The key fields (the PRIMARY KEY declaration order) are in a different order.",
    "Flink writes key fields in PRIMARY KEY declaration order; json, csv and Avro bytes"
    " follow that order, so reordering changes the bytes of every multi-field key."
    + _ORPHAN,
    "PRIMARY KEY (region, id)", "PRIMARY KEY (id, region)", families=(*_TEXT, "avro"),
    checks=_checks("keys.text.fields_changes", "keys.avro.AvroWalk._record"),
)

KEY_FIELD_RENAMED = Rule(
    "KG104", "key-field-renamed", _BYTES, _B,
    "A key field was renamed in a format that writes field names.",
    "JSON keys carry their field names (`{\"user_id\":1}`), so a rename changes every key's"
    " bytes." + _ORPHAN,
    "user_id BIGINT", "uid BIGINT", families=("json",),
    checks=_checks("keys.text.fields_changes"),
)

KEY_FIELD_NOT_NULL = Rule(
    "KG106", "key-field-not-null", _BYTES, _B,
    "A nullable key field became NOT NULL.",
    "Keys that hold a null in the field cannot be written by the new schema at all, and in"
    " Avro the union around the field disappears, changing every key's bytes." + _ORPHAN,
    "region STRING", "region STRING NOT NULL", families=_TEXT,
    checks=_checks("keys.text.type_changes"),
)

# --- KG2xx: column types ------------------------------------------------------------

KEY_TYPE_CHANGED = Rule(
    "KG201", "key-type-changed", _BYTES, _B,
    "A key field's type changed to one whose encoding differs.",
    "The same value is written differently by the new type (`5` vs `5.0` in json, 4 vs 8"
    " bytes in raw, a quoted string vs a number, base64 vs text)." + _ORPHAN,
    "id INT", "id DOUBLE", families=(*_TEXT, "avro", "raw"),
    checks=_checks(
        "keys.text._across_kinds",
        "keys.avro._kind_change",
        "keys.avro._logical_change",
        "keys.avro.AvroWalk._decimal",
        "keys.raw._type_change",
    ),
)

KEY_TYPE_NARROWED = Rule(
    "KG202", "key-type-narrowed", _BYTES, _B,
    "A key field's type was narrowed: some existing keys no longer fit.",
    "Existing keys whose value is outside the new type's range (a BIGINT above 2^31-1 in an"
    " INT, a long in an Avro int, a string that is not a number) cannot be encoded; they can"
    " never be updated or deleted." + _ORPHAN,
    "id BIGINT", "id INT", families=(*_TEXT, "avro", "raw"),
    checks=_checks(
        "keys.text._across_kinds",
        "keys.text._within_kind",
        "keys.avro._kind_change",
        "keys.avro.row_narrowing",
        "keys.raw._type_change",
    ),
)

DECIMAL_SCALE_CHANGED = Rule(
    "KG203", "decimal-scale-changed", _BYTES, _B,
    "A key DECIMAL's scale changed where the scale is part of the bytes.",
    "Avro writes the unscaled integer (12.50 at scale 2 is 1250, at scale 3 12500), csv and"
    " json with encode.decimal-as-plain-number write the digits of the scale; a smaller"
    " scale also rounds distinct keys together." + _ORPHAN,
    "amount DECIMAL(10, 2)", "amount DECIMAL(12, 3)", families=(*_TEXT, "avro"),
    checks=_checks("keys.text._decimal", "keys.avro.AvroWalk._decimal"),
)

DECIMAL_PRECISION_NARROWED = Rule(
    "KG204", "decimal-precision-narrowed", _BYTES, _B,
    "A key DECIMAL's integer digits (precision - scale) shrank.",
    "Existing keys with more integer digits than the new type allows cannot be encoded."
    + _ORPHAN,
    "amount DECIMAL(12, 2)", "amount DECIMAL(10, 2)", families=(*_TEXT, "avro"),
    checks=_checks("keys.text._decimal", "keys.avro.AvroWalk._decimal"),
)

TIME_PRECISION_CHANGED = Rule(
    "KG205", "time-precision-changed", _BYTES, _B,
    "A key TIMESTAMP/TIME precision changed where it changes the bytes.",
    "A lower precision truncates the fraction, so keys differing below it collapse and"
    " change bytes; in Avro, precision picks timestamp-millis vs timestamp-micros, whose"
    " longs differ by a factor of 1000." + _ORPHAN,
    "ts TIMESTAMP(6)", "ts TIMESTAMP(3)", families=(*_TEXT, "avro"),
    checks=_checks("keys.text._within_kind", "keys.avro.row_narrowing"),
)

KEY_LENGTH_CHANGED = Rule(
    "KG207", "key-length-changed", _BYTES, _B,
    "A key CHAR, VARCHAR, BINARY or VARBINARY length changed (or a length was declared or"
    " dropped).",
    "Flink casts every value to the declared type before the format writes it: longer values"
    " are cut to the length, CHAR and BINARY values padded to it (spaces, zero bytes). Keys"
    " written under one length are written with other bytes under another." + _ORPHAN,
    "code CHAR(3)", "code CHAR(4)", families=_TEXT,
    checks=_checks("keys.text._within_kind"),
)

FLOAT_DOUBLE_CHANGED = Rule(
    "KG206", "float-double-changed", _BYTES, _B,
    "A key FLOAT became DOUBLE or the reverse.",
    "Avro and raw write 4 vs 8 bytes; json and csv write Java's Float.toString vs"
    " Double.toString, which differ for most values (0.1f as a double is"
    " 0.10000000149011612)." + _ORPHAN,
    "score FLOAT", "score DOUBLE", families=(*_TEXT, "avro", "raw"),
    checks=_checks("keys.text._within_kind", "keys.avro._kind_change", "keys.raw._type_change"),
)

# --- KG3xx: format options ----------------------------------------------------------

JSON_TIMESTAMP_STANDARD_CHANGED = Rule(
    "KG301", "json-timestamp-standard-changed", _BYTES, _B,
    "json.timestamp-format.standard changed for a key with timestamps.",
    "SQL writes `2024-01-01 10:00:00`, ISO-8601 writes `2024-01-01T10:00:00`." + _ORPHAN,
    "'key.json.timestamp-format.standard' = 'SQL'",
    "'key.json.timestamp-format.standard' = 'ISO-8601'", families=("json",),
    checks=_checks("keys.text._OptionChange.json"),
)

JSON_DECIMAL_PLAIN_NUMBER_CHANGED = Rule(
    "KG302", "json-decimal-plain-number-changed", _BYTES, _B,
    "json.encode.decimal-as-plain-number changed for a key with decimals.",
    "By default Flink strips trailing zeros (`1000.00` -> `1E+3`); as a plain number it"
    " keeps the scale (`1000.00`)." + _ORPHAN,
    "'key.json.encode.decimal-as-plain-number' = 'false'",
    "'key.json.encode.decimal-as-plain-number' = 'true'", families=("json",),
    checks=_checks("keys.text._OptionChange.json"),
)

JSON_IGNORE_NULL_FIELDS_CHANGED = Rule(
    "KG303", "json-ignore-null-fields-changed", _BYTES, _B,
    "json.encode.ignore-null-fields changed for a key with nullable fields.",
    "With the option a null field is left out (`{\"a\":1}`), without it written"
    " (`{\"a\":1,\"b\":null}`)." + _ORPHAN,
    "'key.json.encode.ignore-null-fields' = 'false'",
    "'key.json.encode.ignore-null-fields' = 'true'", families=("json",),
    checks=_checks("keys.text._OptionChange.json"),
)

CSV_FIELD_DELIMITER_CHANGED = Rule(
    "KG304", "csv-field-delimiter-changed", _BYTES, _B,
    "csv.field-delimiter changed.",
    "The delimiter sits between the fields of every composite key, and decides which"
    " strings need quotes." + _ORPHAN,
    "'key.csv.field-delimiter' = ','", "'key.csv.field-delimiter' = ';'", families=("csv",),
    checks=_checks("keys.text._OptionChange.csv"),
)

CSV_QUOTING_CHANGED = Rule(
    "KG305", "csv-quoting-changed", _BYTES, _B,
    "csv.quote-character, csv.disable-quote-character or csv.escape-character changed.",
    "Strings that contain the delimiter, a quote or a line break are written quoted or"
    " escaped; another quote or escape character writes them differently." + _ORPHAN,
    "'key.csv.quote-character' = '\"'", "'key.csv.quote-character' = '''",
    families=("csv",),
    checks=_checks("keys.text._OptionChange.csv"),
)

CSV_NULL_LITERAL_CHANGED = Rule(
    "KG306", "csv-null-literal-changed", _BYTES, _B,
    "csv.null-literal changed for a key with nullable fields.",
    "A null field is written as the null literal (empty by default)." + _ORPHAN,
    "'key.csv.null-literal' = ''", "'key.csv.null-literal' = 'null'", families=("csv",),
    checks=_checks("keys.text._OptionChange.csv"),
)

RAW_ENDIANNESS_CHANGED = Rule(
    "KG307", "raw-endianness-changed", _BYTES, _B,
    "raw.endianness changed for a multi-byte numeric key.",
    "raw writes numbers in the declared byte order: 1 as INT is 00 00 00 01 big-endian and"
    " 01 00 00 00 little-endian." + _ORPHAN,
    "'key.raw.endianness' = 'big-endian'", "'key.raw.endianness' = 'little-endian'",
    families=("raw",),
    checks=_checks("keys.raw._option_change"),
)

RAW_CHARSET_CHANGED = Rule(
    "KG308", "raw-charset-changed", _BYTES, _B,
    "raw.charset changed for a STRING key.",
    "raw writes a STRING in the declared charset; non-ASCII text (and, for UTF-16, all"
    " text) is encoded differently." + _ORPHAN,
    "'key.raw.charset' = 'UTF-8'", "'key.raw.charset' = 'ISO-8859-1'", families=("raw",),
    checks=_checks("keys.raw._option_change"),
)

KEY_FIELDS_PREFIX_CHANGED = Rule(
    "KG309", "key-fields-prefix-changed", _BYTES, _B,
    "key.fields-prefix changed so the key format sees other field names.",
    "The key format sees the table's key columns without the prefix; a new prefix renames"
    " the key fields, which json writes into every key." + _ORPHAN,
    "'key.fields-prefix' = 'k_'", "'key.fields-prefix' = ''", families=("json",),
    checks=_checks("keys.text.text_family_changes"),
)

FORMAT_OPTION_CHANGED = Rule(
    "KG310", "format-option-changed", _BYTES, _B,
    "A format option changed and representative keys encode differently.",
    "keyguard has no specific rule for this option, but encoding representative keys with"
    " the old and the new option gave different bytes." + _ORPHAN,
    families=(*_TEXT, "avro"),
    checks=_checks("keys.avro.family_changes", "keys.analyze._battery_option"),
)

# --- KG4xx: Avro binary encoding ----------------------------------------------------

AVRO_ENUM_SYMBOLS_CHANGED = Rule(
    "KG401", "avro-enum-symbols-changed", _BYTES, _B,
    "An Avro enum symbol was removed or moved to another index.",
    "Avro writes an enum as the symbol's index; a moved symbol is written with a new index,"
    " a removed one cannot be written." + _ORPHAN,
    '"symbols": ["EU", "US"]', '"symbols": ["US", "EU"]', families=("avro",),
    checks=_checks("keys.avro.AvroWalk._enum"),
)

AVRO_UNION_BRANCHES_CHANGED = Rule(
    "KG402", "avro-union-branches-changed", _BYTES, _B,
    "An Avro union around a key field gained, lost or reordered branches.",
    "Avro writes a union value as its branch index followed by the value: `string` ->"
    " `[\"null\", \"string\"]` prefixes every key with 02, and moving a branch changes"
    " the index." + _ORPHAN,
    '"type": "string"', '"type": ["null", "string"]', families=("avro",),
    checks=_checks("keys.avro.AvroWalk._union"),
)

AVRO_FIXED_SIZE_CHANGED = Rule(
    "KG403", "avro-fixed-size-changed", _BYTES, _B,
    "An Avro fixed (or fixed-backed decimal) changed size.",
    "A fixed is written as exactly `size` bytes." + _ORPHAN,
    '"type": "fixed", "size": 8', '"type": "fixed", "size": 16', families=("avro",),
    checks=_checks("keys.avro.AvroWalk._same_kind", "keys.avro.AvroWalk._decimal"),
)

AVRO_TIMESTAMP_UNIT_CHANGED = Rule(
    "KG405", "avro-timestamp-unit-changed", _BYTES, _B,
    "An Avro timestamp/time logical type changed unit (millis vs micros) or kind.",
    "timestamp-millis and timestamp-micros are longs of different units, so the same"
    " instant is a different number (1000 times larger)." + _ORPHAN,
    '"logicalType": "timestamp-millis"', '"logicalType": "timestamp-micros"', families=("avro",),
    checks=_checks("keys.avro._logical_change"),
)

# --- KG5xx: Confluent schema ids ----------------------------------------------------

CONFLUENT_SCHEMA_ID_CHANGED = Rule(
    "KG501", "confluent-schema-id-changed", _BYTES, _B,
    "The candidate key schema gets a different schema id than the existing keys carry.",
    "Confluent's wire format puts the schema id into every key (00 + 4-byte id + the Avro"
    " or JSON body)."
    " Any change the registry sees as a new schema (a new optional field, a default, a doc,"
    " an alias, a namespace) registers a new id, even when it is FULL-compatible: every key"
    " changes bytes." + _ORPHAN + " The way out for good: the header framing (framing ="
    " confluent-header), which puts the id in a record header (KG913).",
    '{"name": "id", "type": "long"}',
    '{"name": "id", "type": "long", "doc": "user id"}',
    families=ANY_FAMILY, framing=Framing.SCHEMA_ID,
    checks=_checks("keys.confluent.confluent_changes"),
)

CONFLUENT_KEYS_CARRY_SEVERAL_IDS = Rule(
    "KG502", "confluent-keys-carry-several-ids", _BYTES, _W,
    "The topic's keys already carry several schema ids.",
    "Keys written under the other ids are already distinct Kafka keys from the ones the"
    " candidate writes: those records are orphans today; this change does not fix them.",
    families=ANY_FAMILY, framing=Framing.SCHEMA_ID,
    checks=_checks("keys.confluent.confluent_changes", "judge._id_findings"),
)

KEY_FRAMING_CHANGED = Rule(
    "KG503", "key-framing-changed", _BYTES, _B,
    "The key's framing changed: where its schema id goes (the key bytes or a header), or how.",
    "The framing decides every key's bytes: Confluent's prefix (00 + 4-byte id + body), the"
    " id in a record header (the bytes are the body alone), Apicurio's 4- or 8-byte prefix of"
    " its own ids. Switching between any two gives every existing key other bytes, whatever"
    " the schema: a one-time re-key (keyguard migrate)." + _ORPHAN,
    "'key.avro-confluent.framing' = 'confluent'",
    "'key.avro-confluent.framing' = 'confluent-header'",
    families=ANY_FAMILY, framing=Framing.SCHEMA_ID,
    checks=_checks("keys.confluent.framing_changes"),
)

# --- KG6xx: key placement -----------------------------------------------------------

KEY_FORMAT_CHANGED = Rule(
    "KG601", "key-format-changed", _PLACE, _B,
    "The key format changed.",
    "Another key format writes other bytes for every key (and so, usually, picks another"
    " partition)." + _ORPHAN,
    "'key.format' = 'json'", "'key.format' = 'avro-confluent'", families=ANY_FAMILY,
    checks=_checks("keys.placement.placement_changes"),
)

PARTITION_COUNT_CHANGED = Rule(
    "KG602", "partition-count-changed", _PLACE, _B,
    "The topic's partition count changed.",
    "Kafka's default partitioner picks murmur2(key) % partitions; with another count most"
    " keys map to another partition, and compaction only folds records within a partition:"
    " the old record stays, the new one lands elsewhere.",
    "partitions = 6", "partitions = 12", families=ANY_FAMILY,
    checks=_checks("keys.placement.placement_changes", "keys.placement.topic_findings"),
)

PARTITIONER_NOT_MURMUR2 = Rule(
    "KG603", "partitioner-not-murmur2", _PLACE, _B,
    "The producer's partitioner is not murmur2, or differs from the old one.",
    "Flink and Java producers place a key by murmur2; librdkafka's default"
    " (consistent_random, CRC32) or a round-robin/fixed partitioner places the same key"
    " elsewhere, so updates and deletes never meet the records they replace.",
    "partitioner = murmur2", "partitioner = consistent_random", families=ANY_FAMILY,
    checks=_checks("keys.placement.placement_changes", "keys.placement.topic_findings"),
)

# --- KG7xx: topic settings ----------------------------------------------------------

TOPIC_NOT_COMPACTED = Rule(
    "KG701", "topic-not-compacted", _TOPIC, _W,
    "The topic's cleanup.policy does not include compact.",
    "An upsert changelog needs compaction to keep the latest record per key; with"
    " delete-only retention old keys vanish after retention.ms and the table is"
    " incomplete for every new reader.",
    "cleanup.policy = compact", "cleanup.policy = delete", families=ANY_FAMILY,
    checks=_checks("keys.placement.topic_findings"),
)

# --- KG9xx: safe changes, explained --------------------------------------------------

INTEGER_WIDENED = Rule(
    "KG901", "integer-widened", _BYTES, _I,
    "An integer key field was widened (INT -> BIGINT, Avro int -> long).",
    "json and csv write the same digits; Avro writes int and long as the same zig-zag"
    " varint. Existing keys keep their bytes.",
    "id INT", "id BIGINT", families=(*_TEXT, "avro"),
    checks=_checks("keys.text._within_kind", "keys.avro._kind_change"),
)

DECIMAL_SCALE_WIDENED_JSON = Rule(
    "KG902", "decimal-scale-widened-json", _BYTES, _I,
    "A json key DECIMAL gained scale; Flink strips trailing zeros.",
    "Without encode.decimal-as-plain-number, Flink writes BigDecimal.stripTrailingZeros(),"
    " so 12.5 is `12.5` at scale 1 and at scale 3.",
    "amount DECIMAL(10, 1)", "amount DECIMAL(12, 3)", families=("json",),
    checks=_checks("keys.text._decimal"),
)

TIME_PRECISION_WIDENED = Rule(
    "KG903", "time-precision-widened", _BYTES, _I,
    "A TIMESTAMP/TIME precision changed in a way the format does not write.",
    "json and csv drop trailing fractional zeros, so a higher precision keeps existing"
    " keys' text (Flink holds TIME in milliseconds: TIME(3) and above write the same).",
    "ts TIMESTAMP(3)", "ts TIMESTAMP(6)", families=_TEXT,
    checks=_checks("keys.text._within_kind"),
)

FIELD_RENAMED_POSITIONAL = Rule(
    "KG904", "field-renamed-positional", _BYTES, _I,
    "A key field was renamed in a positional format.",
    "csv, raw and Avro binary do not write field names: the bytes stay the same.",
    "user_id BIGINT", "uid BIGINT", families=("csv", "raw", "avro"),
    checks=_checks(
        "keys.text.fields_changes",
        "keys.avro.AvroWalk._kept_field",
        "keys.raw.raw_changes",
    ),
)

FIELD_BECAME_NULLABLE = Rule(
    "KG905", "field-became-nullable", _BYTES, _I,
    "A NOT NULL key field became nullable in a format without unions.",
    "json, csv and raw write a non-null value the same whatever the nullability.",
    "id BIGINT NOT NULL", "id BIGINT", families=(*_TEXT, "raw"),
    checks=_checks("keys.text.type_changes", "keys.raw.raw_changes"),
)

AVRO_METADATA_CHANGED = Rule(
    "KG906", "avro-metadata-changed", _BYTES, _I,
    "Only Avro metadata changed (doc, aliases, defaults, order, record names).",
    "Avro binary carries none of these: the payload bytes stay the same. (With"
    " avro-confluent they still change the schema id: see KG501.)",
    '"name": "Key"', '"name": "UserKey", "doc": "..."', families=("avro",),
    checks=_checks("keys.avro.AvroWalk._kept_field", "keys.avro.AvroWalk._meta"),
)

AVRO_ENUM_SYMBOLS_APPENDED = Rule(
    "KG907", "avro-enum-symbols-appended", _BYTES, _I,
    "Avro enum symbols were appended at the end.",
    "Existing symbols keep their index, so existing keys keep their bytes.",
    '["EU", "US"]', '["EU", "US", "APAC"]', families=("avro",),
    checks=_checks("keys.avro.AvroWalk._enum"),
)

SAME_BYTES_TYPE_CHANGE = Rule(
    "KG908", "same-bytes-type-change", _BYTES, _I,
    "A type change that the format writes with the same bytes.",
    "Avro writes string and bytes alike (length + bytes), raw writes a UTF-8 STRING and"
    " its BYTES alike, csv writes an integer or boolean and its text alike.",
    "id STRING", "id BYTES", families=(*_TEXT, "avro", "raw"),
    checks=_checks(
        "keys.text._across_kinds",
        "keys.avro._kind_change",
        "keys.avro._logical_change",
        "keys.raw._type_change",
    ),
)

FORMAT_OPTION_NO_KEY_EFFECT = Rule(
    "KG909", "format-option-no-key-effect", _BYTES, _I,
    "A format option changed that does not change these keys' bytes.",
    "The option only affects decoding, or types this key does not have.",
    "'key.json.ignore-parse-errors' = 'false'", "'key.json.ignore-parse-errors' = 'true'",
    families=(*_TEXT, "avro", "raw"),
    checks=_checks(
        "keys.text._option_change",
        "keys.text.text_family_changes",
        "keys.avro.family_changes",
        "keys.analyze._battery_option",
        "keys.raw._option_change",
        "keys.text._OptionChange.no_effect",
    ),
)

DECIMAL_PRECISION_WIDENED = Rule(
    "KG910", "decimal-precision-widened", _BYTES, _I,
    "A key DECIMAL gained integer digits, scale unchanged.",
    "Precision only bounds the range; the digits (and Avro's unscaled bytes) stay.",
    "amount DECIMAL(10, 2)", "amount DECIMAL(12, 2)", families=(*_TEXT, "avro"),
    checks=_checks("keys.text._decimal", "keys.avro.AvroWalk._decimal"),
)

CONFLUENT_SAME_SCHEMA_ID = Rule(
    "KG911", "confluent-same-schema-id", _BYTES, _I,
    "The candidate key schema is the one registered under the id the keys carry.",
    "The registry dedupes a schema by its parsed and re-serialized text (whitespace and"
    " JSON key order do not count), so the keys keep their id and bytes.",
    families=ANY_FAMILY, framing=Framing.SCHEMA_ID,
    checks=_checks("keys.confluent.confluent_changes"),
)

NULLABLE_FIELD_ADDED_IGNORED = Rule(
    "KG912", "nullable-field-added-ignored", _BYTES, _I,
    "A nullable field was added to a json key written with encode.ignore-null-fields.",
    "Existing keys have no value for it, and a null field is left out of the json, so"
    " existing keys keep their bytes. (Setting it later changes them: KG101.)",
    "id BIGINT", "id BIGINT, region STRING", families=("json",),
    checks=_checks("keys.text.fields_changes"),
)

KEY_SCHEMA_ID_IN_HEADER = Rule(
    "KG913", "key-schema-id-in-header", _BYTES, _I,
    "The key's schema id is in a record header: a new key schema id changes no key bytes.",
    "Under a header framing (Confluent's confluent-header, Apicurio's header ids) the key"
    " bytes are the body alone, so the schema-id rule (KG501) does not apply: the key rules"
    " judge the body, and a change that keeps it (a doc, a namespace, an alias) keeps every"
    " key.",
    "'key.avro-confluent.framing' = 'confluent-header'; {\"name\": \"id\", \"type\": \"long\"}",
    "{\"name\": \"id\", \"type\": \"long\", \"doc\": \"user id\"}",
    families=ANY_FAMILY, framing=Framing.ID_IN_HEADER,
    checks=_checks("keys.confluent.framing_changes"),
)

# --- KG42x (and KG94x, safe): Protobuf wire encoding --------------------------------

_PROTO = ("protobuf",)


def _proto(*names: str) -> tuple[str, ...]:
    return _checks(*(f"keys.protobuf.{n}" for n in names))


PROTOBUF_FIELD_NUMBER_CHANGED = Rule(
    "KG421", "protobuf-field-number-changed", _BYTES, _B,
    "A Protobuf key field got another field number.",
    "Protobuf writes each field as its number and wire type, then the value: the same value"
    " under another number is other bytes (field 1 = 42 is 08 2a, field 2 = 42 is 10 2a)."
    + _ORPHAN,
    "int64 id = 1;", "int64 id = 2;", families=_PROTO,
    checks=_proto("ProtoWalk._field"),
)

PROTOBUF_WIRE_ENCODING_CHANGED = Rule(
    "KG422", "protobuf-wire-encoding-changed", _BYTES, _B,
    "A Protobuf key field's type changed to one encoded differently.",
    "sint32/sint64 are zig-zag varints (1 is 02), int32/int64 plain varints (1 is 01);"
    " fixed32 is 4 bytes, fixed64 8; float 4, double 8; a scalar, a message, a repeated"
    " field and a map are all written differently." + _ORPHAN,
    "int32 id = 1;", "sint32 id = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._field", "ProtoWalk._type", "ProtoWalk._field_pair_in"),
)

PROTOBUF_TYPE_NARROWED = Rule(
    "KG423", "protobuf-type-narrowed", _BYTES, _B,
    "A Protobuf key field's type shares the encoding but cannot hold every existing value.",
    "int32, int64, uint32, uint64 and bool share the varint, but -1 is no uint32, 2^31 no"
    " int32 and 2 no bool (a reader of the new type sees another value, written back as"
    " other bytes); bytes that are not UTF-8 are no string." + _ORPHAN,
    "int32 id = 1;", "uint32 id = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._type"),
)

PROTOBUF_PRESENCE_CHANGED = Rule(
    "KG424", "protobuf-presence-changed", _BYTES, _B,
    "A Protobuf key field changed between implicit and explicit presence.",
    "A proto3 field without `optional` leaves its zero value off the wire; with `optional`"
    " (or in a oneof, or proto2) a set zero is written (08 00). Keys holding the zero value"
    " change bytes." + _ORPHAN,
    "int32 shard = 2;", "optional int32 shard = 2;", families=_PROTO,
    checks=_proto("ProtoWalk._field_settings"),
)

PROTOBUF_PACKED_CHANGED = Rule(
    "KG425", "protobuf-packed-changed", _BYTES, _B,
    "A repeated scalar key field changed between packed and unpacked.",
    "Packed (proto3's default) writes one length-delimited record of all elements"
    " (0a 02 01 02), unpacked (proto2's default, [packed=false]) a record per element"
    " (08 01 08 02)." + _ORPHAN,
    "repeated int32 parts = 1;", "repeated int32 parts = 1 [packed = false];", families=_PROTO,
    checks=_proto("ProtoWalk._field_settings"),
)

PROTOBUF_FIELD_REMOVED = Rule(
    "KG426", "protobuf-field-removed", _BYTES, _B,
    "A field was removed from the Protobuf key message.",
    "Existing keys that set the field hold its bytes; the new message writes none, and keys"
    " that differed only in it collapse into one." + _ORPHAN,
    "int64 id = 1; string region = 2;", "int64 id = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._removed"),
)

PROTOBUF_FIELD_REQUIRED = Rule(
    "KG427", "protobuf-field-required", _BYTES, _B,
    "A proto2 key field is required that existing keys may lack.",
    "A required field added, or an optional one made required: the runtime refuses to"
    " write a message without it, so existing keys cannot be written again." + _ORPHAN,
    "optional string region = 2;", "required string region = 2;", families=_PROTO,
    checks=_proto("ProtoWalk._added", "ProtoWalk._field"),
)

PROTOBUF_ENUM_NUMBER_CHANGED = Rule(
    "KG428", "protobuf-enum-number-changed", _BYTES, _B,
    "A Protobuf enum value in the key got another number, or was removed.",
    "An enum is written as its number: a value renumbered is other bytes, a value removed"
    " cannot be written by name." + _ORPHAN,
    "EU = 1; US = 2;", "EU = 2; US = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._enum"),
)

PROTOBUF_ONEOF_MERGED = Rule(
    "KG429", "protobuf-oneof-merged", _BYTES, _B,
    "Several Protobuf key fields were moved into one oneof.",
    "A oneof holds one of its fields: existing keys that set two of them cannot be written"
    " (setting one clears the other)." + _ORPHAN,
    "int64 id = 1; string name = 2;", "oneof ref { int64 id = 1; string name = 2; }",
    families=_PROTO,
    checks=_proto("ProtoWalk._oneofs"),
)

PROTOBUF_MESSAGE_INDEX_CHANGED = Rule(
    "KG430", "protobuf-message-index-changed", _BYTES, _B,
    "The key message moved in its .proto file under protobuf-registry.",
    "Confluent's Protobuf wire format writes the key message's index in its file after the"
    " schema id (00 for the first message, 02 02 for the second): inserting or reordering"
    " messages before it changes every key." + _ORPHAN,
    "message Key {...} message Other {...}", "message Other {...} message Key {...}",
    families=_PROTO, framing=Framing.MESSAGE_INDEX,
    checks=_proto("message_changes"),
)

PROTOBUF_FIELD_RENAMED = Rule(
    "KG941", "protobuf-field-renamed", _BYTES, _I,
    "A Protobuf key field was renamed, its number kept.",
    "Protobuf writes field numbers, not names: the bytes stay the same.",
    "int64 user_id = 1;", "int64 uid = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._field"),
)

PROTOBUF_SAME_WIRE_ENCODING = Rule(
    "KG942", "protobuf-same-wire-encoding", _BYTES, _I,
    "A Protobuf key field's type changed to one that writes every existing value the same.",
    "int32 -> int64, uint32 -> uint64 or int64, bool or an enum -> an integer, sint32 ->"
    " sint64, string -> bytes: the same encoding, and the new type holds every old value.",
    "int32 id = 1;", "int64 id = 1;", families=_PROTO,
    checks=_proto("ProtoWalk._type"),
)

PROTOBUF_FIELD_ADDED = Rule(
    "KG943", "protobuf-field-added", _BYTES, _I,
    "A field with presence was added to the Protobuf key message.",
    "Existing rows have it unset (null: a proto3 `optional`, proto2 optional or message"
    " field) and an unset field is not written, so existing keys keep their bytes. A key that"
    " sets the field is another key. A field without presence (a proto3 scalar, a repeated"
    " field) is a NOT NULL column every row fills: KG101.",
    "int64 id = 1;", "int64 id = 1; optional string region = 2;", families=_PROTO,
    checks=_proto("ProtoWalk._added"),
)

PROTOBUF_DEFAULT_CHANGED = Rule(
    "KG944", "protobuf-default-changed", _BYTES, _I,
    "A proto2 key field's [default = ...] changed.",
    "Defaults are not written: a set field is written whatever its value, an unset one not"
    " at all. Only readers of an unset field see the new default.",
    "optional int32 shard = 2 [default = 0];", "optional int32 shard = 2 [default = 1];",
    families=_PROTO,
    checks=_proto("ProtoWalk._field_settings"),
)

PROTOBUF_ENUM_VALUES_COMPATIBLE = Rule(
    "KG945", "protobuf-enum-values-compatible", _BYTES, _I,
    "Protobuf enum values were added or renamed, every number kept.",
    "An enum is written as its number: existing values keep their bytes.",
    "EU = 1;", "EU = 1; US = 2;", families=_PROTO,
    checks=_proto("ProtoWalk._enum"),
)

PROTOBUF_ONEOF_CHANGED = Rule(
    "KG946", "protobuf-oneof-changed", _BYTES, _I,
    "A Protobuf key field moved into or out of a oneof, keeping its presence.",
    "The same number, type and presence write the same bytes in a oneof or outside it.",
    "optional int64 id = 1;", "oneof ref { int64 id = 1; }", families=_PROTO,
    checks=_proto("ProtoWalk._oneofs"),
)

PROTOBUF_MESSAGE_RENAMED = Rule(
    "KG947", "protobuf-message-renamed", _BYTES, _I,
    "The key message's name or package changed (or, unframed, its place in the file).",
    "The Protobuf body carries no names, and bare protobuf keys no message index. (Under"
    " protobuf-registry the registry sees a new schema: see KG501; a move: KG430.)",
    "package shop; message Key", "package shop.v2; message OrderKey", families=_PROTO,
    checks=_proto("message_changes"),
)

# --- The registry ---------------------------------------------------------------------

#: The key analysis's rules (guard/keys): structural rules, the witness search, placement.
KEY_RULES: tuple[Rule, ...] = (
    KEY_BYTES_DIFFER, KEY_FIELD_ADDED, KEY_FIELD_REMOVED, KEY_FIELDS_REORDERED,
    KEY_FIELD_RENAMED, KEY_FIELD_NOT_NULL, KEY_TYPE_CHANGED, KEY_TYPE_NARROWED,
    DECIMAL_SCALE_CHANGED, DECIMAL_PRECISION_NARROWED, TIME_PRECISION_CHANGED, KEY_LENGTH_CHANGED,
    FLOAT_DOUBLE_CHANGED, JSON_TIMESTAMP_STANDARD_CHANGED, JSON_DECIMAL_PLAIN_NUMBER_CHANGED,
    JSON_IGNORE_NULL_FIELDS_CHANGED, CSV_FIELD_DELIMITER_CHANGED, CSV_QUOTING_CHANGED,
    CSV_NULL_LITERAL_CHANGED, RAW_ENDIANNESS_CHANGED, RAW_CHARSET_CHANGED,
    KEY_FIELDS_PREFIX_CHANGED, FORMAT_OPTION_CHANGED, AVRO_ENUM_SYMBOLS_CHANGED,
    AVRO_UNION_BRANCHES_CHANGED, AVRO_FIXED_SIZE_CHANGED, AVRO_TIMESTAMP_UNIT_CHANGED,
    CONFLUENT_SCHEMA_ID_CHANGED, CONFLUENT_KEYS_CARRY_SEVERAL_IDS, KEY_FRAMING_CHANGED,
    KEY_FORMAT_CHANGED,
    PARTITION_COUNT_CHANGED, PARTITIONER_NOT_MURMUR2, TOPIC_NOT_COMPACTED, INTEGER_WIDENED,
    DECIMAL_SCALE_WIDENED_JSON, TIME_PRECISION_WIDENED, FIELD_RENAMED_POSITIONAL,
    FIELD_BECAME_NULLABLE, AVRO_METADATA_CHANGED, AVRO_ENUM_SYMBOLS_APPENDED,
    SAME_BYTES_TYPE_CHANGE, FORMAT_OPTION_NO_KEY_EFFECT, DECIMAL_PRECISION_WIDENED,
    CONFLUENT_SAME_SCHEMA_ID, NULLABLE_FIELD_ADDED_IGNORED, KEY_SCHEMA_ID_IN_HEADER,
    PROTOBUF_FIELD_NUMBER_CHANGED, PROTOBUF_WIRE_ENCODING_CHANGED, PROTOBUF_TYPE_NARROWED,
    PROTOBUF_PRESENCE_CHANGED, PROTOBUF_PACKED_CHANGED, PROTOBUF_FIELD_REMOVED,
    PROTOBUF_FIELD_REQUIRED, PROTOBUF_ENUM_NUMBER_CHANGED, PROTOBUF_ONEOF_MERGED,
    PROTOBUF_MESSAGE_INDEX_CHANGED, PROTOBUF_FIELD_RENAMED, PROTOBUF_SAME_WIRE_ENCODING,
    PROTOBUF_FIELD_ADDED, PROTOBUF_DEFAULT_CHANGED, PROTOBUF_ENUM_VALUES_COMPATIBLE,
    PROTOBUF_ONEOF_CHANGED, PROTOBUF_MESSAGE_RENAMED,
)
#: What the check itself knows: first versions, assumed ids, missing subjects, unlisted ids.
CHECK_RULES: tuple[Rule, ...] = (KEY_FIRST_VERSION, KEYS_ASSUMED_LATEST, SUBJECT_MISSING,
                                 KEYS_UNLISTED_ID)
#: What keys sampled from the topic prove (guard/realkeys.py).
REAL_KEY_RULES: tuple[Rule, ...] = (REAL_KEY_CHANGES, REAL_KEY_MISPLACED)
#: Value schemas against the subject's compatibility level, and the value's framing
#: (guard/values.py).
VALUE_RULES: tuple[Rule, ...] = (VALUE_INCOMPATIBLE, REGISTRY_DISAGREES, VALUE_FIRST_VERSION,
                                 VALUE_FRAMING_CHANGED)
#: What `keyguard audit` finds in a topic's bytes (guard/audit).
AUDIT_RULES: tuple[Rule, ...] = (PHANTOM_KEY, MISPLACED_KEY, UNDECODABLE_RECORD, NULL_KEY,
                                 COMPACTION_DEFEATED, AUDIT_UNLISTED_ID, MISSED_DELETE,
                                 MIXED_FRAMING)

#: Every rule, by ID, in ID order: what `keyguard rules` lists and SARIF declares.
ALL_RULES: dict[str, Rule] = {r.id: r for r in sorted(
    (*KEY_RULES, *CHECK_RULES, *REAL_KEY_RULES, *VALUE_RULES,
     *AUDIT_RULES), key=lambda r: r.id)}

#: The key analysis's rules by ID (guard/keys); `ALL_RULES` has every rule.
RULES: dict[str, Rule] = {r.id: r for r in KEY_RULES}

#: Retired rule IDs that keep working: old ID -> the ID of the rule that replaced it. `--ignore`,
#: `--select`, the config file, `guard.ignore` and `keyguard rules OLD` all accept the old ID.
#: An entry is never removed, and an old ID is never given to a new rule.
ALIASES: dict[str, str] = {}


def rule(rule_id: str) -> Rule:
    """The rule with `rule_id` (or the rule that replaced it); KeyError names an unknown ID."""
    rid = rule_id.upper()
    return ALL_RULES[ALIASES.get(rid, rid)]


def all_rules() -> list[Rule]:
    """The key analysis's rules (guard/keys), in their declaration order."""
    return list(KEY_RULES)
