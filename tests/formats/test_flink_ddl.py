"""keyguard.formats.flink_ddl: a Flink CREATE TABLE read as keyguard's table (columns, key,
options).

The DDLs marked "Flink docs" are the examples of Flink's upsert-kafka, kafka and avro-confluent
documentation pages; the equivalence tests show a DDL and the options it stands for give the
same key and value bytes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.errors import (
    InvalidOptionError,
    KeyguardError,
    SchemaError,
    UnsupportedTypeError,
)
from keyguard.formats.flink_ddl import FlinkDdlError, load_flink_ddl, read_flink_ddl
from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns, parse_type

# --- DDLs from Flink's documentation -------------------------------------------------------

#: Flink docs, upsert-kafka page: the sink of the pageviews aggregation.
PAGEVIEWS_PER_REGION = """
CREATE TABLE pageviews_per_region (
  user_region STRING,
  pv BIGINT,
  uv BIGINT,
  PRIMARY KEY (user_region) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'pageviews_per_region',
  'properties.bootstrap.servers' = '...',
  'key.format' = 'avro',
  'value.format' = 'avro'
);
"""

#: Flink docs, upsert-kafka page: the source table (kafka, no key format).
PAGEVIEWS = """
CREATE TABLE pageviews (
  user_id BIGINT,
  page_id BIGINT,
  viewtime TIMESTAMP(3),
  user_region STRING,
  WATERMARK FOR viewtime AS viewtime - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'pageviews',
  'properties.bootstrap.servers' = '...',
  'format' = 'json'
);
"""

#: Flink docs, upsert-kafka page: metadata columns.
UPSERT_METADATA = """
CREATE TABLE KafkaTable (
  `event_time` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  `partition` BIGINT METADATA VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL,
  `user_id` BIGINT,
  `item_id` BIGINT,
  `behavior` STRING,
  PRIMARY KEY (`user_id`) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'user_behavior',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'value.format' = 'json'
);
"""

#: Flink docs, kafka page: key and value formats.
KAFKA_KEY_FIELDS = """
CREATE TABLE KafkaTable (
  `ts` TIMESTAMP(3) METADATA FROM 'timestamp',
  `user_id` BIGINT,
  `item_id` BIGINT,
  `behavior` STRING
) WITH (
  'connector' = 'kafka',
  'topic' = 'user_behavior',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'key.json.ignore-parse-errors' = 'true',
  'key.fields' = 'user_id;item_id',

  'value.format' = 'json',
  'value.json.fail-on-missing-field' = 'false',
  'value.fields-include' = 'ALL'
)
"""

#: Flink docs, kafka page: overlapping key and value names, with key.fields-prefix.
KAFKA_PREFIX = """
CREATE TABLE KafkaTable (
  `k_version` INT,
  `k_user_id` BIGINT,
  `k_item_id` BIGINT,
  `version` INT,
  `behavior` STRING
) WITH (
  'connector' = 'kafka',
  'topic' = 'user_behavior',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'key.fields-prefix' = 'k_',
  'key.fields' = 'k_version;k_user_id;k_item_id',

  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY'
)
"""

#: Flink docs, avro-confluent page: a raw UTF-8 key and an Avro value.
AVRO_CONFLUENT_RAW_KEY = """
CREATE TABLE user_created (
  -- one column mapped to the Kafka raw UTF-8 key
  the_kafka_key STRING,
  -- a few columns mapped to the Avro fields of the Kafka value
  id STRING,
  name STRING,
  email STRING
) WITH (
  'connector' = 'kafka',
  'topic' = 'user_events_example1',
  'properties.bootstrap.servers' = 'localhost:9092',
  -- UTF-8 string as Kafka keys, using the 'the_kafka_key' table column
  'key.format' = 'raw',
  'key.fields' = 'the_kafka_key',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://localhost:8082',
  'value.fields-include' = 'EXCEPT_KEY'
)
"""

#: Flink docs, avro-confluent page: upsert-kafka with Avro keys and values.
AVRO_CONFLUENT_UPSERT = """
CREATE TABLE user_created (
  -- one column mapped to the 'id' Avro field of the Kafka key
  kafka_key_id STRING,
  -- a few columns mapped to the Avro fields of the Kafka value
  id STRING,
  name STRING,
  email STRING,
  -- upsert-kafka connector requires a primary key to define the upsert behavior
  PRIMARY KEY (kafka_key_id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'user_events_example3',
  'properties.bootstrap.servers' = 'localhost:9092',
  -- UTF-8 string as Kafka keys
  -- (There is no need to specify 'key.fields' since it is the primary key)
  'key.format' = 'avro-confluent',
  'key.avro-confluent.url' = 'http://localhost:8082',
  'key.fields-prefix' = 'kafka_key_',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://localhost:8082',
  'value.fields-include' = 'EXCEPT_KEY'
)
"""


def test_flink_docs_upsert_kafka_table() -> None:
    t = read_flink_ddl(PAGEVIEWS_PER_REGION, "pv.sql")
    assert t.name == "pageviews_per_region"
    assert t.connector == "upsert-kafka"
    assert t.columns == parse_columns("user_region STRING NOT NULL, pv BIGINT, uv BIGINT")
    assert t.primary_key == ("user_region",)
    assert t.options == {"topic": "pageviews_per_region", "key.format": "avro",
                         "value.format": "avro", "primary-key": "user_region"}
    assert t.properties == {"properties.bootstrap.servers": "..."}
    assert t.ignored == ()
    assert t.partitioner == "default" and t.producer_partitioner == "murmur2"


def test_flink_docs_kafka_table_without_a_key_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match=r"x\.sql:8:3: a kafka table without "
                       r"'key\.format' and 'key\.fields' writes no key"):
        read_flink_ddl(PAGEVIEWS, "x.sql")


def test_flink_docs_metadata_columns_are_ignored_and_listed() -> None:
    t = read_flink_ddl(UPSERT_METADATA, "m.sql")
    assert list(t.columns.names) == ["user_id", "item_id", "behavior"]
    assert [(i.line, i.column, i.what, i.name) for i in t.ignored] == [
        (3, 3, "metadata column", "event_time"), (4, 3, "metadata column", "partition"),
        (5, 3, "metadata column", "offset")]
    assert str(t.ignored[0]).startswith("m.sql:3:3: metadata column event_time ignored: ")


def test_flink_docs_kafka_key_fields_are_the_key() -> None:
    t = read_flink_ddl(KAFKA_KEY_FIELDS)
    assert t.connector == "kafka"
    assert t.primary_key == ("user_id", "item_id")
    assert t.options["primary-key"] == "user_id,item_id"
    assert t.format_options("key") == {"ignore-parse-errors": "true"}
    assert t.format_options("value") == {"fail-on-missing-field": "false"}
    assert t.columns.field("user_id").type.nullable  # no PRIMARY KEY: no implied NOT NULL


def test_flink_docs_prefix_and_except_key() -> None:
    t = read_flink_ddl(KAFKA_PREFIX)
    assert t.key_fields_prefix == "k_"
    key, value = t.written_schemas()
    assert '"version"' in key.text and '"k_version"' not in key.text
    assert '"behavior"' in value.text and '"user_id"' not in value.text


@pytest.mark.parametrize("ddl", [AVRO_CONFLUENT_RAW_KEY, AVRO_CONFLUENT_UPSERT],
                         ids=["raw-key", "upsert"])
def test_flink_docs_avro_confluent_tables(ddl: str) -> None:
    t = read_flink_ddl(ddl)
    assert t.topic.startswith("user_events_example")
    assert t.format_options("value")["url"] == "http://localhost:8082"


def test_avro_confluent_upsert_key_schema_is_flinks() -> None:
    key, _ = read_flink_ddl(AVRO_CONFLUENT_UPSERT).written_schemas()
    assert key.schema_type == "AVRO"
    assert key.text == ('{"type":"record","name":"record","namespace":'
                        '"org.apache.flink.avro.generated","fields":[{"name":"id",'
                        '"type":"string"}]}')


# --- syntax ----------------------------------------------------------------------------------

SYNTAX = """/* a block
   comment */ CREATE TEMPORARY TABLE IF NOT EXISTS `my cat`.db.`it``s` (
  `region name` STRING COMMENT 'it''s the region', -- a line comment
  amount DECIMAL(10, 2),
  tags ARRAY<ROW<`a b` INT, c MAP<STRING, BIGINT>>>,
  id BIGINT NOT NULL PRIMARY KEY NOT ENFORCED,
  doubled AS amount * 2 COMMENT 'computed',
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) COMMENT 'a table' WITH (
  'connector' = 'upsert-kafka', 'topic' = 'it-s', /* between */
  'key.format' = 'json', 'value.format' = 'json',
  'sink.parallelism' = '2', 'sink.partitioner' = 'round-robin'
);
"""


def test_a_topic_kafka_would_refuse_is_refused_with_its_place() -> None:
    with pytest.raises(InvalidOptionError, match=r"s\.sql:\d+:\d+: .*a Kafka topic name is"):
        read_flink_ddl(SYNTAX.replace("'it-s'", "'it''s'"), "s.sql")


def test_comments_quoting_escapes_and_names() -> None:
    t = read_flink_ddl(SYNTAX, "s.sql")
    assert t.name == "my cat.db.it`s"
    assert t.topic == "it-s"
    assert list(t.columns.names) == ["region name", "amount", "tags", "id"]
    assert t.columns.field("region name").description == "it's the region"
    assert t.columns.field("tags").type.sql() == "ARRAY<ROW<`a b` INT, `c` MAP<STRING, BIGINT>>>"
    assert t.primary_key == ("id",)
    assert t.connector_options == {"sink.parallelism": "2"}
    assert t.partitioner == "round-robin"
    assert [(i.line, i.what, i.name) for i in t.ignored] == [
        (7, "computed column", "doubled"), (8, "metadata column", "ts"),
        (9, "watermark", "for ts")]


def test_constraint_names_and_legacy_option_keys() -> None:
    t = read_flink_ddl("""CREATE TABLE t (a INT, b STRING,
        CONSTRAINT pk PRIMARY KEY (b, a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
        'topic' = 't', 'key.format' = 'avro-confluent', 'value.format' = 'json',
        'key.avro-confluent.schema-registry.url' = 'http://sr:8081')""")
    assert t.primary_key == ("b", "a")
    assert t.options["primary-key"] == "b,a"
    assert t.format_options("key") == {"schema-registry.url": "http://sr:8081"}


# --- errors, with line and column ------------------------------------------------------------

OK_WITH = ("WITH ('connector' = 'upsert-kafka', 'topic' = 't', 'key.format' = 'json', "
           "'value.format' = 'json')")


@pytest.mark.parametrize(("ddl", "error", "where", "message"), [
    ("CREATE TABLE t (\n  a INT,\n  b FOO,\n  PRIMARY KEY (a) NOT ENFORCED\n) " + OK_WITH,
     FlinkDdlError, "3:5", "unknown type 'FOO'"),
    ("CREATE TABLE t (\n  a INT,\n  b INTERVAL DAY,\n  PRIMARY KEY (a) NOT ENFORCED\n) " + OK_WITH,
     UnsupportedTypeError, "3:5", "unsupported type INTERVAL"),
    ("CREATE TABLE t (\n  a INT,\n  b Real,\n  PRIMARY KEY (a) NOT ENFORCED\n) " + OK_WITH,
     UnsupportedTypeError, "3:5", "Type is not supported: REAL"),  # Flink 2.3's own words
    ("CREATE TABLE t (a DECIMAL(10, 20), PRIMARY KEY (a) NOT ENFORCED) " + OK_WITH,
     FlinkDdlError, "1:27", "scale"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a)) " + OK_WITH,
     FlinkDdlError, "1:39", "expected NOT"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (b) NOT ENFORCED) " + OK_WITH,
     FlinkDdlError, "1:37", "'b' is not a physical column"),
    ("CREATE TABLE t (a INT) " + OK_WITH,
     FlinkDdlError, "1:24", "needs PRIMARY KEY"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED)\nWITH ('connector' = 'jdbc')",
     InvalidOptionError, "2:21", "connector 'jdbc' is not supported"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'json', 'value.format' = 'json',\n"
     " 'key.json.timestamp-format.standrd' = 'ISO-8601')",
     InvalidOptionError, "3:2", "did you mean 'key.json.timestamp-format.standard'"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'json', 'value.format' = 'json',\n"
     " 'key.json.timestamp-format.standard' = 'ISO')", InvalidOptionError, "3:41",
     "must be one of SQL, ISO-8601"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'jsn', 'value.format' = 'json')",
     InvalidOptionError, "2:32", "unknown format 'jsn'"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'json', 'value.format' = 'json', 'scan.startup.mod' = 'x')",
     InvalidOptionError, "2:65", "'scan.startup.mod' is not supported"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'json', 'value.format' = 'json', 'key.csv.x' = 'x')",
     InvalidOptionError, "2:65", "belongs to no format"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     "\n 'topic' = 't', 'key.format' = 'avro-confluent', 'value.format' = 'json')",
     InvalidOptionError, "1:54", "required option 'url' is missing"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',"
     " 'topic' = 't', 'key.format' = 'json', 'value.format' = 'json',"
     " 'sink.partitioner' = 'com.acme.MyPartitioner')",
     InvalidOptionError, "1:174", "custom partitioner"),
    ("CREATE TABLE t (a INT, a STRING, PRIMARY KEY (a) NOT ENFORCED) " + OK_WITH,
     FlinkDdlError, "1:24", "duplicate column 'a'"),
    ("CREATE TABLE t (a INT /* never closed, PRIMARY KEY (a) NOT ENFORCED) " + OK_WITH,
     FlinkDdlError, "1:23", "unterminated /* comment"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka)",
     FlinkDdlError, "1:74", "unterminated 'string'"),
    ("CREATE TABLE `t (a INT)", FlinkDdlError, "1:14", "unterminated `identifier`"),
    ("CREATE VIEW v AS SELECT 1", FlinkDdlError, "1:8", "CREATE VIEW is not a table"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) " + OK_WITH + "; SELECT 1",
     FlinkDdlError, "1:154", "after the CREATE TABLE statement"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) PARTITIONED BY (a) " + OK_WITH,
     FlinkDdlError, "1:54", "PARTITIONED BY is not supported"),
    ("CREATE TABLE t (a INT, b INT) WITH ('connector' = 'kafka', 'topic' = 't', "
     "'key.format' = 'json', 'key.fields' = 'a;c', 'format' = 'json')",
     InvalidOptionError, "1:113", "key.fields names 'c'"),
    ("", FlinkDdlError, "1:1", "no CREATE TABLE statement"),
])
def test_errors_name_line_and_column(ddl: str, error: type[KeyguardError], where: str,
                                     message: str) -> None:
    with pytest.raises(error) as info:
        read_flink_ddl(ddl, "t.sql")
    assert info.value.exit_code == 2
    first = info.value.message.splitlines()[0]
    assert first.startswith(f"t.sql:{where}: "), info.value.message
    assert message in first
    line, col = (int(n) for n in where.split(":"))
    # the caret points at the column of the line shown
    shown, caret = info.value.message.splitlines()[1:3]
    assert shown[2:] == ddl.splitlines()[line - 1] if ddl else True
    assert caret.index("^") == col + 1


def test_unreadable_file_is_invalid_input(tmp_path: Any) -> None:
    with pytest.raises(InvalidOptionError, match="cannot read Flink DDL file"):
        load_flink_ddl(tmp_path / "missing.sql")
    (tmp_path / "t.sql").write_text(PAGEVIEWS_PER_REGION)
    assert load_flink_ddl(tmp_path / "t.sql").origin == str(tmp_path / "t.sql")


def test_a_kafka_primary_key_must_agree_with_key_fields() -> None:
    with pytest.raises(SchemaError, match="disagree"):
        read_flink_ddl("CREATE TABLE t (a INT, b INT, PRIMARY KEY (b) NOT ENFORCED) WITH ("
                       "'connector' = 'kafka', 'topic' = 't', 'key.format' = 'json', "
                       "'key.fields' = 'a', 'value.format' = 'json')")


# --- a DDL and its options give the same bytes -------------------------------------------------

EQUIVALENT = [
    (KAFKA_PREFIX, {
        "topic": "user_behavior", "primary-key": "k_version,k_user_id,k_item_id",
        "key.format": "json", "key.fields-prefix": "k_", "value.format": "json",
        "value.fields-include": "EXCEPT_KEY"},
     "k_version INT, k_user_id BIGINT, k_item_id BIGINT, version INT, behavior STRING",
     {"k_version": 1, "k_user_id": 7, "k_item_id": 9, "version": 2, "behavior": "buy"}),
    ("""CREATE TABLE orders (
        region STRING, id BIGINT, amount DECIMAL(10, 2), ts TIMESTAMP(3),
        PRIMARY KEY (region, id) NOT ENFORCED) WITH (
        'connector' = 'upsert-kafka', 'topic' = 'orders',
        'key.format' = 'csv', 'key.csv.field-delimiter' = '|',
        'value.format' = 'json', 'value.json.timestamp-format.standard' = 'ISO-8601',
        'value.json.encode.decimal-as-plain-number' = 'true')""", {
        "topic": "orders", "primary-key": "region,id", "key.format": "csv",
        "key.csv.field-delimiter": "|", "value.format": "json",
        "value.json.timestamp-format.standard": "ISO-8601",
        "value.json.encode.decimal-as-plain-number": "true"},
     "region STRING NOT NULL, id BIGINT NOT NULL, amount DECIMAL(10, 2), ts TIMESTAMP(3)",
     {"region": "eu", "id": 3, "amount": Decimal("1000.00"),
      "ts": datetime(2024, 1, 1, 0, 0, 0, 120000)}),
    (PAGEVIEWS_PER_REGION, {
        "topic": "pageviews_per_region", "primary-key": "user_region", "key.format": "avro",
        "value.format": "avro"},
     "user_region STRING NOT NULL, pv BIGINT, uv BIGINT",
     {"user_region": "eu-west", "pv": 10, "uv": None}),
]


@pytest.mark.parametrize(("ddl", "options", "columns", "row"), EQUIVALENT,
                         ids=["json-prefix", "csv-json", "avro"])
def test_a_ddl_and_its_options_write_the_same_bytes(ddl: str, options: dict[str, str],
                                                    columns: str, row: dict[str, Any]) -> None:
    t = read_flink_ddl(ddl)
    assert dict(t.options) == options
    assert t.columns == parse_columns(columns)
    from_ddl = resolve_plan(t.columns, t.options).encode(row)
    from_options = resolve_plan(parse_columns(columns), options).encode(row)
    assert from_ddl == from_options
    assert all(from_ddl)


# --- what Flink 2.3 itself makes of these statements (data/flink_ddl/describe.json) -----------

FLINK_DESCRIBE = json.loads((Path(__file__).parent / "data" / "flink_ddl" / "describe.json")
                            .read_text(encoding="utf-8"))
#: Statements Flink accepts and keyguard refuses on purpose.
REFUSED = {"PAGEVIEWS": "writes no key"}


def test_every_statement_here_was_shown_to_flink() -> None:
    names = [n for n, v in globals().items()
             if n.isupper() and isinstance(v, str) and re.search(r"CREATE (TEMPORARY )?TABLE", v)]
    assert sorted(names) == sorted(FLINK_DESCRIBE)
    assert all(isinstance(rows, list) for rows in FLINK_DESCRIBE.values())  # Flink took each


@pytest.mark.parametrize("name", sorted(FLINK_DESCRIBE))
def test_columns_are_flinks(name: str) -> None:
    """Physical columns with Flink's types and nullability (primary-key columns NOT NULL);
    metadata and computed columns are the ones listed as ignored."""
    rows = FLINK_DESCRIBE[name]
    ddl = globals()[name]
    if name in REFUSED:
        with pytest.raises(KeyguardError, match=REFUSED[name]):
            read_flink_ddl(ddl)
        return
    t = read_flink_ddl(ddl)
    physical = [r for r in rows if r[4] is None]
    assert list(t.columns.names) == [r[0] for r in physical]
    for r in physical:
        flink_type = parse_type(r[1].replace(" *ROWTIME*", "")).with_nullable(r[2] == "True")
        field = t.columns.field(r[0])
        assert field.type == flink_type, r
        assert field.description == (r[6] if len(r) > 6 and r[6] != "None" else None), r
    ignored = {i.name for i in t.ignored if i.what != "watermark"}
    assert ignored == {r[0] for r in rows if r[4] is not None}
    assert {i.name for i in t.ignored if i.what == "watermark"} == \
        {f"for {r[0]}" for r in rows if r[5] is not None}


def test_an_error_never_shows_a_credential_of_the_statement() -> None:
    ddl = ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = "
           "'upsert-kafka', 'topic' = 't', 'value.format' = 'json', 'key.format' = "
           "'avro-confluent', 'key.avro-confluent.url' = 'https://bob:url-pw-1234@sr:8081',\n"
           "'key.avro-confluent.basic-auth.user-info' = 'alice:s3cret-pw', "
           "'key.avro-confluent.bogus' = 'x')")
    with pytest.raises(InvalidOptionError) as info:
        read_flink_ddl(ddl, "t.sql")
    shown = str(info.value)
    assert "t.sql:2:64: option 'key.avro-confluent.bogus'" in shown
    assert "s3cret-pw" not in shown and "url-pw-1234" not in shown
    line, caret = info.value.message.splitlines()[1:3]
    assert line == "  'key.avro-confluent.basic-auth.user-info' = '***************', " \
        "'key.avro-confluent.bogus' = 'x')"  # the line is shown, its secret is not
    assert caret.index("^") == 2 + 63


def test_a_syntax_error_after_a_credential_does_not_show_it() -> None:
    ddl = ("CREATE TABLE t (a INT) WITH ('properties.sasl.jaas.config' = 'x password=\"pw-98765\";'"
           ", 'topic' = 'never closed)")
    with pytest.raises(FlinkDdlError) as info:
        read_flink_ddl(ddl, "t.sql")
    assert "unterminated 'string'" in str(info.value)
    assert "pw-98765" not in str(info.value)


SECRET_LINES = {
    "unterminated": "  'properties.sasl.password' = 'unterminated-secret-3\n",
    "misspelled": "  'key.avro-confluent.bearer-auth.tokn' = 'typo-secret-2',\n",
    "in a comment": "  'bogus.option' = 'x', -- 'properties.sasl.password' = "
                    "'commented-secret-1'\n",
    "unknown name": "  'properties.my.api.pwd' = 'unknown-secret-4', 'nope' = 'x',\n",
}


@pytest.mark.parametrize("case", sorted(SECRET_LINES))
def test_an_error_quoting_a_line_never_shows_a_credential(case: str) -> None:
    """The source line an error quotes is masked: known credential options, misspelled or
    unknown ones whose name looks like a credential, comments and unterminated values."""
    ddl = ("CREATE TABLE t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (\n"
           "  'connector' = 'upsert-kafka', 'topic' = 't', 'key.format' = 'avro-confluent',\n"
           + SECRET_LINES[case] + "  'value.format' = 'json'\n);")
    with pytest.raises((FlinkDdlError, InvalidOptionError)) as err:
        read_flink_ddl(ddl, "o.sql")
    text = str(err.value) + (err.value.hint or "")
    assert "o.sql:" in text
    assert not any(s in text for s in ("secret-3", "secret-2", "secret-1", "secret-4"))
    assert "*" in text  # masked in place: the caret still points at the right column


def test_masking_keeps_what_is_no_credential() -> None:
    from keyguard.formats.secrets import mask_source

    text = ("'key.format' = 'json', 'primary-key' = 'id', 'key.fields-prefix' = 'k_', "
            "'ssl.key.password' = 'p', 'x.api-key' = 'k'")
    assert mask_source(text) == ("'key.format' = 'json', 'primary-key' = 'id', "
                                 "'key.fields-prefix' = 'k_', 'ssl.key.password' = '*', "
                                 "'x.api-key' = '*'")
