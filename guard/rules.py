"""The rule catalogue: every check the key guard makes, as data (like ruff's and buf's rules).

IDs are stable: users select and ignore rules by ID, reports and CI annotations cite them.
Ranges: KG0xx catch-alls, KG1xx key fields, KG2xx column types, KG3xx format options,
KG4xx Avro binary encoding, KG5xx Confluent schema ids, KG6xx key placement, KG7xx topic
settings, KG9xx safe changes explained (INFO). A new rule takes a new ID; an ID is never reused.
"""

from __future__ import annotations

from guard.report import Category, Rule, Severity

_B, _W, _I = Severity.BREAKING, Severity.WARNING, Severity.INFO
_BYTES, _PLACE, _TOPIC = Category.KEY_BYTES, Category.KEY_PLACEMENT, Category.TOPIC
_ALL = ("json", "csv", "raw", "avro", "avro-confluent")
_TEXT = ("json", "csv")
_AVRO = ("avro", "avro-confluent")
_ORPHAN = (
    " Compaction, partitioning and every consumer identify a key by its exact bytes, so the"
    " records already in the topic are never overwritten or deleted by the new writes:"
    " phantom rows stay, deletes miss."
)

_RULES: tuple[Rule, ...] = (
    Rule(
        "KG000", "key-bytes-differ", _BYTES, _B,
        "An existing key encodes to different bytes under the new key schema.",
        "The structural rules found no reason, but encoding a representative key with the old"
        " and the new codec gave different bytes (or the new one could not encode it). The"
        " guard reports it rather than stay silent; please report it as a keyguard bug too."
        + _ORPHAN,
        formats=_ALL,
    ),
    # --- KG1xx: key fields --------------------------------------------------------------
    Rule(
        "KG101", "key-field-added", _BYTES, _B,
        "A field was added to the key.",
        "Every existing key lacks the new field, so the new writer emits different bytes for"
        " the same entity (a new field, a new column, a null, or a union branch)." + _ORPHAN,
        "id BIGINT", "id BIGINT, region STRING", formats=_ALL,
    ),
    Rule(
        "KG102", "key-field-removed", _BYTES, _B,
        "A field was removed from the key.",
        "The bytes of every existing key held the removed field; the new writer leaves it out,"
        " and keys that differed only in that field now collapse into one." + _ORPHAN,
        "id BIGINT, region STRING", "id BIGINT", formats=_ALL,
    ),
    Rule(
        "KG103", "key-fields-reordered", _BYTES, _B,
        "The key fields (the PRIMARY KEY declaration order) are in a different order.",
        "Flink writes key fields in PRIMARY KEY declaration order; json, csv and Avro bytes"
        " follow that order, so reordering changes the bytes of every multi-field key."
        + _ORPHAN,
        "PRIMARY KEY (region, id)", "PRIMARY KEY (id, region)", formats=("json", "csv", *_AVRO),
    ),
    Rule(
        "KG104", "key-field-renamed", _BYTES, _B,
        "A key field was renamed in a format that writes field names.",
        "JSON keys carry their field names (`{\"user_id\":1}`), so a rename changes every key's"
        " bytes." + _ORPHAN,
        "user_id BIGINT", "uid BIGINT", formats=("json",),
    ),
    Rule(
        "KG106", "key-field-not-null", _BYTES, _B,
        "A nullable key field became NOT NULL.",
        "Keys that hold a null in the field cannot be written by the new schema at all, and in"
        " Avro the union around the field disappears, changing every key's bytes." + _ORPHAN,
        "region STRING", "region STRING NOT NULL", formats=_ALL,
    ),
    # --- KG2xx: column types ------------------------------------------------------------
    Rule(
        "KG201", "key-type-changed", _BYTES, _B,
        "A key field's type changed to one whose encoding differs.",
        "The same value is written differently by the new type (`5` vs `5.0` in json, 4 vs 8"
        " bytes in raw, a quoted string vs a number, base64 vs text)." + _ORPHAN,
        "id INT", "id DOUBLE", formats=_ALL,
    ),
    Rule(
        "KG202", "key-type-narrowed", _BYTES, _B,
        "A key field's type was narrowed: some existing keys no longer fit.",
        "Existing keys whose value is outside the new type's range (a BIGINT above 2^31-1 in an"
        " INT, a long in an Avro int, a string that is not a number) cannot be encoded; they can"
        " never be updated or deleted." + _ORPHAN,
        "id BIGINT", "id INT", formats=_ALL,
    ),
    Rule(
        "KG203", "decimal-scale-changed", _BYTES, _B,
        "A key DECIMAL's scale changed where the scale is part of the bytes.",
        "Avro writes the unscaled integer (12.50 at scale 2 is 1250, at scale 3 12500), csv and"
        " json with encode.decimal-as-plain-number write the digits of the scale; a smaller"
        " scale also rounds distinct keys together." + _ORPHAN,
        "amount DECIMAL(10, 2)", "amount DECIMAL(12, 3)", formats=_ALL,
    ),
    Rule(
        "KG204", "decimal-precision-narrowed", _BYTES, _B,
        "A key DECIMAL's integer digits (precision - scale) shrank.",
        "Existing keys with more integer digits than the new type allows cannot be encoded."
        + _ORPHAN,
        "amount DECIMAL(12, 2)", "amount DECIMAL(10, 2)", formats=_ALL,
    ),
    Rule(
        "KG205", "time-precision-changed", _BYTES, _B,
        "A key TIMESTAMP/TIME precision changed where it changes the bytes.",
        "A lower precision truncates the fraction, so keys differing below it collapse and"
        " change bytes; in Avro, precision picks timestamp-millis vs timestamp-micros, whose"
        " longs differ by a factor of 1000." + _ORPHAN,
        "ts TIMESTAMP(6)", "ts TIMESTAMP(3)", formats=_ALL,
    ),
    Rule(
        "KG206", "float-double-changed", _BYTES, _B,
        "A key FLOAT became DOUBLE or the reverse.",
        "Avro and raw write 4 vs 8 bytes; json and csv write Java's Float.toString vs"
        " Double.toString, which differ for most values (0.1f as a double is"
        " 0.10000000149011612)." + _ORPHAN,
        "score FLOAT", "score DOUBLE", formats=_ALL,
    ),
    # --- KG3xx: format options ----------------------------------------------------------
    Rule(
        "KG301", "json-timestamp-standard-changed", _BYTES, _B,
        "json.timestamp-format.standard changed for a key with timestamps.",
        "SQL writes `2024-01-01 10:00:00`, ISO-8601 writes `2024-01-01T10:00:00`." + _ORPHAN,
        "'key.json.timestamp-format.standard' = 'SQL'",
        "'key.json.timestamp-format.standard' = 'ISO-8601'", formats=("json",),
    ),
    Rule(
        "KG302", "json-decimal-plain-number-changed", _BYTES, _B,
        "json.encode.decimal-as-plain-number changed for a key with decimals.",
        "By default Flink strips trailing zeros (`1000.00` -> `1E+3`); as a plain number it"
        " keeps the scale (`1000.00`)." + _ORPHAN,
        "'key.json.encode.decimal-as-plain-number' = 'false'",
        "'key.json.encode.decimal-as-plain-number' = 'true'", formats=("json",),
    ),
    Rule(
        "KG303", "json-ignore-null-fields-changed", _BYTES, _B,
        "json.encode.ignore-null-fields changed for a key with nullable fields.",
        "With the option a null field is left out (`{\"a\":1}`), without it written"
        " (`{\"a\":1,\"b\":null}`)." + _ORPHAN,
        "'key.json.encode.ignore-null-fields' = 'false'",
        "'key.json.encode.ignore-null-fields' = 'true'", formats=("json",),
    ),
    Rule(
        "KG304", "csv-field-delimiter-changed", _BYTES, _B,
        "csv.field-delimiter changed.",
        "The delimiter sits between the fields of every composite key, and decides which"
        " strings need quotes." + _ORPHAN,
        "'key.csv.field-delimiter' = ','", "'key.csv.field-delimiter' = ';'", formats=("csv",),
    ),
    Rule(
        "KG305", "csv-quoting-changed", _BYTES, _B,
        "csv.quote-character, csv.disable-quote-character or csv.escape-character changed.",
        "Strings that contain the delimiter, a quote or a line break are written quoted or"
        " escaped; another quote or escape character writes them differently." + _ORPHAN,
        "'key.csv.quote-character' = '\"'", "'key.csv.quote-character' = '''",
        formats=("csv",),
    ),
    Rule(
        "KG306", "csv-null-literal-changed", _BYTES, _B,
        "csv.null-literal changed for a key with nullable fields.",
        "A null field is written as the null literal (empty by default)." + _ORPHAN,
        "'key.csv.null-literal' = ''", "'key.csv.null-literal' = 'null'", formats=("csv",),
    ),
    Rule(
        "KG307", "raw-endianness-changed", _BYTES, _B,
        "raw.endianness changed for a multi-byte numeric key.",
        "raw writes numbers in the declared byte order: 1 as INT is 00 00 00 01 big-endian and"
        " 01 00 00 00 little-endian." + _ORPHAN,
        "'key.raw.endianness' = 'big-endian'", "'key.raw.endianness' = 'little-endian'",
        formats=("raw",),
    ),
    Rule(
        "KG308", "raw-charset-changed", _BYTES, _B,
        "raw.charset changed for a STRING key.",
        "raw writes a STRING in the declared charset; non-ASCII text (and, for UTF-16, all"
        " text) is encoded differently." + _ORPHAN,
        "'key.raw.charset' = 'UTF-8'", "'key.raw.charset' = 'ISO-8859-1'", formats=("raw",),
    ),
    Rule(
        "KG309", "key-fields-prefix-changed", _BYTES, _B,
        "key.fields-prefix changed so the key format sees other field names.",
        "The key format sees the table's key columns without the prefix; a new prefix renames"
        " the key fields, which json writes into every key." + _ORPHAN,
        "'key.fields-prefix' = 'k_'", "'key.fields-prefix' = ''", formats=("json",),
    ),
    Rule(
        "KG310", "format-option-changed", _BYTES, _B,
        "A format option changed and representative keys encode differently.",
        "keyguard has no specific rule for this option, but encoding representative keys with"
        " the old and the new option gave different bytes." + _ORPHAN,
        formats=_ALL,
    ),
    # --- KG4xx: Avro binary encoding ----------------------------------------------------
    Rule(
        "KG401", "avro-enum-symbols-changed", _BYTES, _B,
        "An Avro enum symbol was removed or moved to another index.",
        "Avro writes an enum as the symbol's index; a moved symbol is written with a new index,"
        " a removed one cannot be written." + _ORPHAN,
        '"symbols": ["EU", "US"]', '"symbols": ["US", "EU"]', formats=_AVRO,
    ),
    Rule(
        "KG402", "avro-union-branches-changed", _BYTES, _B,
        "An Avro union around a key field gained, lost or reordered branches.",
        "Avro writes a union value as its branch index followed by the value: `string` ->"
        " `[\"null\", \"string\"]` prefixes every key with 02, and moving a branch changes"
        " the index." + _ORPHAN,
        '"type": "string"', '"type": ["null", "string"]', formats=_AVRO,
    ),
    Rule(
        "KG403", "avro-fixed-size-changed", _BYTES, _B,
        "An Avro fixed (or fixed-backed decimal) changed size.",
        "A fixed is written as exactly `size` bytes." + _ORPHAN,
        '"type": "fixed", "size": 8', '"type": "fixed", "size": 16', formats=_AVRO,
    ),
    Rule(
        "KG405", "avro-timestamp-unit-changed", _BYTES, _B,
        "An Avro timestamp/time logical type changed unit (millis vs micros) or kind.",
        "timestamp-millis and timestamp-micros are longs of different units, so the same"
        " instant is a different number (1000 times larger)." + _ORPHAN,
        '"logicalType": "timestamp-millis"', '"logicalType": "timestamp-micros"', formats=_AVRO,
    ),
    # --- KG5xx: Confluent schema ids ----------------------------------------------------
    Rule(
        "KG501", "confluent-schema-id-changed", _BYTES, _B,
        "The candidate key schema gets a different schema id than the existing keys carry.",
        "Confluent's wire format puts the schema id into every key (00 + 4-byte id + Avro)."
        " Any change the registry sees as a new schema (a new optional field, a default, a doc,"
        " an alias, a namespace) registers a new id, even when it is FULL-compatible: every key"
        " changes bytes." + _ORPHAN,
        '{"name": "id", "type": "long"}',
        '{"name": "id", "type": "long", "doc": "user id"}', formats=("avro-confluent",),
    ),
    Rule(
        "KG502", "confluent-keys-carry-several-ids", _BYTES, _W,
        "The topic's keys already carry several schema ids.",
        "Keys written under the other ids are already distinct Kafka keys from the ones the"
        " candidate writes: those records are orphans today; this change does not fix them.",
        formats=("avro-confluent",),
    ),
    # --- KG6xx: key placement -----------------------------------------------------------
    Rule(
        "KG601", "key-format-changed", _PLACE, _B,
        "The key format changed.",
        "Another key format writes other bytes for every key (and so, usually, picks another"
        " partition)." + _ORPHAN,
        "'key.format' = 'json'", "'key.format' = 'avro-confluent'", formats=_ALL,
    ),
    Rule(
        "KG602", "partition-count-changed", _PLACE, _B,
        "The topic's partition count changed.",
        "Kafka's default partitioner picks murmur2(key) % partitions; with another count most"
        " keys map to another partition, and compaction only folds records within a partition:"
        " the old record stays, the new one lands elsewhere.",
        "partitions = 6", "partitions = 12", formats=_ALL,
    ),
    Rule(
        "KG603", "partitioner-not-murmur2", _PLACE, _B,
        "The producer's partitioner is not murmur2, or differs from the old one.",
        "Flink and Java producers place a key by murmur2; librdkafka's default"
        " (consistent_random, CRC32) or a round-robin/fixed partitioner places the same key"
        " elsewhere, so updates and deletes never meet the records they replace.",
        "partitioner = murmur2", "partitioner = consistent_random", formats=_ALL,
    ),
    # --- KG7xx: topic settings ----------------------------------------------------------
    Rule(
        "KG701", "topic-not-compacted", _TOPIC, _W,
        "The topic's cleanup.policy does not include compact.",
        "An upsert changelog needs compaction to keep the latest record per key; with"
        " delete-only retention old keys vanish after retention.ms and the table is"
        " incomplete for every new reader.",
        "cleanup.policy = compact", "cleanup.policy = delete", formats=_ALL,
    ),
    # --- KG9xx: safe changes, explained --------------------------------------------------
    Rule(
        "KG901", "integer-widened", _BYTES, _I,
        "An integer key field was widened (INT -> BIGINT, Avro int -> long).",
        "json and csv write the same digits; Avro writes int and long as the same zig-zag"
        " varint. Existing keys keep their bytes.",
        "id INT", "id BIGINT", formats=("json", "csv", *_AVRO),
    ),
    Rule(
        "KG902", "decimal-scale-widened-json", _BYTES, _I,
        "A json key DECIMAL gained scale; Flink strips trailing zeros.",
        "Without encode.decimal-as-plain-number, Flink writes BigDecimal.stripTrailingZeros(),"
        " so 12.5 is `12.5` at scale 1 and at scale 3.",
        "amount DECIMAL(10, 1)", "amount DECIMAL(12, 3)", formats=("json",),
    ),
    Rule(
        "KG903", "time-precision-widened", _BYTES, _I,
        "A TIMESTAMP/TIME precision changed in a way the format does not write.",
        "json and csv drop trailing fractional zeros, so a higher precision keeps existing"
        " keys' text (Flink holds TIME in milliseconds: TIME(3) and above write the same).",
        "ts TIMESTAMP(3)", "ts TIMESTAMP(6)", formats=_TEXT,
    ),
    Rule(
        "KG904", "field-renamed-positional", _BYTES, _I,
        "A key field was renamed in a positional format.",
        "csv, raw and Avro binary do not write field names: the bytes stay the same.",
        "user_id BIGINT", "uid BIGINT", formats=("csv", "raw", "avro"),
    ),
    Rule(
        "KG905", "field-became-nullable", _BYTES, _I,
        "A NOT NULL key field became nullable in a format without unions.",
        "json, csv and raw write a non-null value the same whatever the nullability.",
        "id BIGINT NOT NULL", "id BIGINT", formats=("json", "csv", "raw"),
    ),
    Rule(
        "KG906", "avro-metadata-changed", _BYTES, _I,
        "Only Avro metadata changed (doc, aliases, defaults, order, record names).",
        "Avro binary carries none of these: the payload bytes stay the same. (With"
        " avro-confluent they still change the schema id: see KG501.)",
        '"name": "Key"', '"name": "UserKey", "doc": "..."', formats=_AVRO,
    ),
    Rule(
        "KG907", "avro-enum-symbols-appended", _BYTES, _I,
        "Avro enum symbols were appended at the end.",
        "Existing symbols keep their index, so existing keys keep their bytes.",
        '["EU", "US"]', '["EU", "US", "APAC"]', formats=_AVRO,
    ),
    Rule(
        "KG908", "same-bytes-type-change", _BYTES, _I,
        "A type change that the format writes with the same bytes.",
        "Avro writes string and bytes alike (length + bytes), raw writes a UTF-8 STRING and"
        " its BYTES alike, csv writes an integer or boolean and its text alike.",
        "id STRING", "id BYTES", formats=_ALL,
    ),
    Rule(
        "KG909", "format-option-no-key-effect", _BYTES, _I,
        "A format option changed that does not change these keys' bytes.",
        "The option only affects decoding, or types this key does not have.",
        "'key.json.ignore-parse-errors' = 'false'", "'key.json.ignore-parse-errors' = 'true'",
        formats=_ALL,
    ),
    Rule(
        "KG910", "decimal-precision-widened", _BYTES, _I,
        "A key DECIMAL gained integer digits, scale unchanged.",
        "Precision only bounds the range; the digits (and Avro's unscaled bytes) stay.",
        "amount DECIMAL(10, 2)", "amount DECIMAL(12, 2)", formats=_ALL,
    ),
    Rule(
        "KG911", "confluent-same-schema-id", _BYTES, _I,
        "The candidate key schema is the one registered under the id the keys carry.",
        "The registry dedupes a schema by its parsed and re-serialized text (whitespace and"
        " JSON key order do not count), so the keys keep their id and bytes.",
        formats=("avro-confluent",),
    ),
    Rule(
        "KG912", "nullable-field-added-ignored", _BYTES, _I,
        "A nullable field was added to a json key written with encode.ignore-null-fields.",
        "Existing keys have no value for it, and a null field is left out of the json, so"
        " existing keys keep their bytes. (Setting it later changes them: KG101.)",
        "id BIGINT", "id BIGINT, region STRING", formats=("json",),
    ),
)

RULES: dict[str, Rule] = {r.id: r for r in _RULES}


def rule(rule_id: str) -> Rule:
    """The rule with `rule_id`; KeyError names the unknown ID."""
    return RULES[rule_id]


def all_rules() -> list[Rule]:
    return list(_RULES)
