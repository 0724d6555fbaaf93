"""Bad input to every verb, generated: one bad value at a time in an otherwise valid command
line, for `audit`, `migrate`, `check`, `encode`, `decode`, `diff` and Flink DDLs (protobuf
included). Each case asserts exit 2 and an input error's kind, before any broker or registry
is asked (the broker named is 127.0.0.1:1: a case that got as far as asking would exit 3),
no traceback, and no secret of the command line in the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from badinput import Outcome, run_cli
from secret_forms import leaked

#: The kinds of an input error (exit 2).
INPUT_KINDS = ("usage", "invalid-option", "invalid-schema", "unsupported-type", "invalid-input",
               "encode", "decode")
DEAD = "127.0.0.1:1"
SECRET = "hunter2-generated-secret"

COLUMNS = "id BIGINT, region STRING, name STRING"
BAD_COLUMNS = [
    "", " ", "id", "id BIGINTX", "id BIGINT,", "id BIGINT, , name STRING", "id ARRAY<",
    "id ARRAY<INT", "id MAP<STRING>", "id DECIMAL(0, 1)", "id DECIMAL(39, 2)",
    "id DECIMAL(5, 9)", "id VARCHAR(0)", "id TIMESTAMP(10)", "id TIME(10)", "id INT NOT",
    "id INT, id INT", "`id INT", "id INT) DROP", "id MULTISET<INT>", "id RAW('x', 'y')",
    "id INTERVAL DAY", "id ARRAY<" * 150 + "INT" + ">" * 150, "id \x00INT",
    "id STRING COMMENT", "id STRING COMMENT 'unterminated", "id INT NULL NOT NULL",
    "id STRUCTURED<INT>", "id TIMESTAMP_LTZ(-1)",
]
BAD_FORMATS = ["jsn", "", " json", "JSON!", "avro-confluent2", "protobuf-registy", "raw-x",
               "../json", "json\x00"]
BAD_TOPICS = ["bad name", "", "..", ".", "t/1", "ümlaut", "x" * 250, "a:b", "t\n"]
BAD_KAFKA = ["nokv", "=1", "no.such.property=1", "socket.timeout.ms=soon", "acks=maybe",
             f"sasl.password={SECRET}", "security.protocol=CARRIER_PIGEON",
             "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
             f'required password="{SECRET}";', "ssl.key.location=/no/such/file.pem"]
BAD_PK = ["", "nosuch", "id,nosuch", "id,,region", " ,", "id,id"]


def _mutations(flag: str, values: list[str]) -> Iterator[tuple[str, list[str]]]:
    for i, value in enumerate(values):
        yield f"{flag}#{i}", [flag, value]


# --- audit ---------------------------------------------------------------------------------

def _audit(fmt: str) -> list[str]:
    return ["audit", "--topic", "orders", "--bootstrap", DEAD, "--columns", COLUMNS,
            "--primary-key", "id", "--key-format", fmt, "--value-format", "json"]


def _audit_cases() -> Iterator[tuple[str, list[str], list[str]]]:
    for fmt in ("json", "csv", "avro"):
        base = _audit(fmt)
        for name, extra in (*_mutations("--columns", BAD_COLUMNS),
                            *_mutations("--primary-key", BAD_PK),
                            *_mutations("--value-format", BAD_FORMATS),
                            *_mutations("--topic", BAD_TOPICS),
                            *_mutations("--kafka-config", BAD_KAFKA),
                            *_mutations("--sample", ["0", "-1", "x", "1.5", ""]),
                            *_mutations("--format", ["yaml", "", "sarif2"]),
                            *_mutations("-o", ["nokv", "key.json.bogus=1", f"bogus={SECRET}",
                                               "key.json.ignore-parse-errors=perhaps"])):
            yield f"audit-{fmt}-{name}", base, extra


# --- migrate -------------------------------------------------------------------------------

def _migrate(fmt: str) -> list[str]:
    return ["migrate", "--topic", "orders", "--bootstrap", DEAD, "--columns", COLUMNS,
            "--old-key-format", fmt, "--value-format", "json", "--primary-key", "id", "--yes"]


def _migrate_cases() -> Iterator[tuple[str, list[str], list[str]]]:
    for fmt in ("json", "csv", "avro"):
        base = _migrate(fmt)
        for name, extra in (*_mutations("--columns", BAD_COLUMNS),
                            *_mutations("--primary-key", BAD_PK),
                            *_mutations("--new-key-format", BAD_FORMATS),
                            *_mutations("--value-format", BAD_FORMATS),
                            *_mutations("--to-topic", BAD_TOPICS),
                            *_mutations("--kafka-config", BAD_KAFKA),
                            *_mutations("--new-partitions", ["0", "-1", "x", ""]),
                            *_mutations("--old-option", ["nokv", "=x", "9:primary-key=id",
                                                         "primary-key=nosuch",
                                                         "key.json.bogus=1", "x:y=z"]),
                            *_mutations("--new-option", ["nokv", "=x", "primary-key=nosuch",
                                                         "key.fields-prefix=zz_"]),
                            *_mutations("--value-option", ["nokv", "value.json.bogus=1",
                                                           "value.fields-include=SOME"]),
                            *_mutations("--format", ["yaml", ""])):
            yield f"migrate-{fmt}-{name}", base, extra


# --- encode / decode / check ---------------------------------------------------------------

def _encode(fmt: str) -> list[str]:
    return ["encode", "--columns", COLUMNS, "--primary-key", "id", "--key-format", fmt,
            "--value-format", "json", "--row", '{"id": 1, "region": "eu", "name": "a"}']


def _decode(fmt: str) -> list[str]:
    return ["decode", "--columns", COLUMNS, "--primary-key", "id", "--key-format", fmt,
            "--value-format", "json", "--key", "7b226964223a317d"]


def _bytes_cases() -> Iterator[tuple[str, list[str], list[str]]]:
    for fmt in ("json", "csv", "avro", "raw"):
        for verb, base in (("encode", _encode(fmt)), ("decode", _decode(fmt))):
            for name, extra in (*_mutations("--columns", BAD_COLUMNS),
                                *_mutations("--primary-key", BAD_PK),
                                *_mutations("--value-format", BAD_FORMATS),
                                *_mutations("--topic", BAD_TOPICS),
                                *_mutations("-o", ["nokv", "key.json.bogus=1",
                                                   f"bogus={SECRET}"])):
                yield f"{verb}-{fmt}-{name}", base, extra


# --- Flink DDLs, in every verb that takes one ----------------------------------------------

DDL = """CREATE TABLE orders (
  id BIGINT, region STRING, name STRING,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'orders',
  'properties.bootstrap.servers' = '127.0.0.1:1',
  'properties.sasl.password' = '{secret}',
  'key.format' = 'json', 'value.format' = 'json'
);"""

DDL_MUTATIONS = {
    "unterminated": ("'orders'", "'orders"),
    "no-connector": ("'connector' = 'upsert-kafka', ", ""),
    "other-connector": ("'upsert-kafka'", "'filesystem'"),
    "no-pk": ("PRIMARY KEY (id) NOT ENFORCED", "CONSTRAINT c CHECK (id > 0)"),
    "pk-unknown": ("PRIMARY KEY (id)", "PRIMARY KEY (nosuch)"),
    "enforced": ("NOT ENFORCED", "ENFORCED"),
    "bad-type": ("id BIGINT", "id BIGINTX"),
    "deep-type": ("name STRING", "name " + "ARRAY<" * 150 + "INT" + ">" * 150),
    "bad-topic": ("'topic' = 'orders'", "'topic' = 'bad name'"),
    "no-topic": ("'topic' = 'orders',", ""),
    "bad-key-format": ("'key.format' = 'json'", "'key.format' = 'jsn'"),
    "no-key-format": ("'key.format' = 'json', ", ""),
    "bad-option": ("'value.format' = 'json'", "'value.format' = 'json', 'value.json.bogus' = '1'"),
    "two-statements": (");", "); CREATE TABLE x (id INT);"),
    "no-with": ("WITH (", "WITHOUT ("),
    "empty": (DDL, ""),
    "garbage": (DDL, "\x00\xff not sql at all"),
    "comment-only": (DDL, "-- nothing\n/* here */"),
    "duplicate-column": ("region STRING,", "region STRING, region INT,"),
    "duplicate-option": ("'key.format' = 'json'", "'key.format' = 'json', 'key.format' = 'csv'"),
    "unquoted-option": ("'key.format' = 'json'", "key.format = 'json'"),
    "fields-prefix-mismatch": ("'key.format' = 'json'",
                               "'key.format' = 'json', 'key.fields-prefix' = 'k_'"),
    "avro-confluent-no-url": ("'key.format' = 'json'", "'key.format' = 'avro-confluent'"),
}


def _empty_registry(where: Path) -> Path:
    (where / "schemas" / "subjects").mkdir(parents=True, exist_ok=True)
    return where / "schemas"


def _ddl_file(tmp_path: Path, mutation: str) -> Path:
    old, new = DDL_MUTATIONS[mutation]
    text = DDL.replace(old.format(secret=SECRET), new) if old != DDL else new
    path = tmp_path / f"{mutation}.sql"
    path.write_text(text.format(secret=SECRET) if "{secret}" in text else text)
    return path


DDL_VERBS = {
    "check": lambda ddl: ["check", "--flink-ddl", str(ddl), "--registry",
                          f"file://{_empty_registry(ddl.parent)}"],
    "encode": lambda ddl: ["encode", "--flink-ddl", str(ddl), "--row", '{"id": 1}'],
    "decode": lambda ddl: ["decode", "--flink-ddl", str(ddl), "--key", "7b226964223a317d"],
    "audit": lambda ddl: ["audit", "--flink-ddl", str(ddl), "--bootstrap", DEAD],
    "migrate": lambda ddl: ["migrate", "--flink-ddl", str(ddl), "--old-key-format", "json",
                            "--bootstrap", DEAD, "--yes"],
    "diff": lambda ddl: ["diff", "--key", str(ddl), str(ddl)],
}

# --- protobuf schema files -----------------------------------------------------------------

PROTOS = {
    "syntax-error": 'syntax = "proto3";\nmessage K {\n  strin id = 1;\n}\n',
    "empty": "",
    "no-message": 'syntax = "proto3";\n',
    "duplicate-number": 'syntax = "proto3";\nmessage K { string a = 1; string b = 1; }\n',
    "unknown-import": 'syntax = "proto3";\nimport "nope.proto";\nmessage K { string a = 1; }\n',
    "escaping-import": 'syntax = "proto3";\nimport "../../etc/x.proto";\nmessage K {}\n',
    "binary": "\x00\x01\x02",
    "huge-number": 'syntax = "proto3";\nmessage K { string a = 536870912; }\n',
    "reserved-number": 'syntax = "proto3";\nmessage K { string a = 19000; }\n',
    "proto2-required-default": ('syntax = "proto2";\n'
                                'message K { required string a = 1 [default = 1]; }\n'),
}

PROTO_VERBS = {
    "diff": lambda p: ["diff", "--key", "--key-format", "protobuf-registry", str(p), str(p)],
    "encode": lambda p: ["encode", "--key-schema", str(p), "--key-format", "protobuf",
                         "--value-format", "json", "--columns", "a STRING",
                         "--row", '{"a": "x"}'],
    "check": lambda p: ["check", "--key-schema", str(p), "--key-format", "protobuf-registry",
                        "--topic", "orders", "--registry", f"file://{_empty_registry(p.parent)}"],
}


def _all_cli_cases() -> list[tuple[str, list[str], list[str]]]:
    return [*_audit_cases(), *_migrate_cases(), *_bytes_cases()]


def _rejected(args: list[str]) -> Outcome:
    """Exit 2 with an input error's kind, or click's own usage error (a value of the wrong
    type for a flag: `Usage: ...` and `Error: Invalid value`); no traceback."""
    out = run_cli(args)
    assert "Traceback" not in out.output and out.kind != "internal", out.output
    assert out.code == 2, f"exit {out.code}, wanted 2: {out.output}"
    assert out.kind in INPUT_KINDS or (out.kind is None and "Usage:" in out.output), out.output
    return out


@pytest.mark.parametrize(("case", "base", "extra"), _all_cli_cases(),
                         ids=[c[0] for c in _all_cli_cases()])
def test_one_bad_flag_value_is_exit_2_before_any_broker(case: str, base: list[str],
                                                        extra: list[str]) -> None:
    out = _rejected([*base, *extra])
    assert leaked(out.output, SECRET) == []


@pytest.mark.parametrize("verb", sorted(DDL_VERBS))
@pytest.mark.parametrize("mutation", sorted(DDL_MUTATIONS))
def test_a_bad_flink_ddl_is_exit_2_in_every_verb(tmp_path: Path, verb: str,
                                                 mutation: str) -> None:
    ddl = _ddl_file(tmp_path, mutation)
    out = _rejected(DDL_VERBS[verb](ddl))
    assert leaked(out.output, SECRET) == []


@pytest.mark.parametrize("verb", sorted(PROTO_VERBS))
@pytest.mark.parametrize("proto", sorted(PROTOS))
def test_a_bad_proto_file_is_exit_2_in_every_verb(tmp_path: Path, verb: str,
                                                  proto: str) -> None:
    path = tmp_path / "k.proto"
    path.write_text(PROTOS[proto])
    _rejected(PROTO_VERBS[verb](path))


def test_the_generated_suite_is_large() -> None:
    n = len(_all_cli_cases()) + len(DDL_VERBS) * len(DDL_MUTATIONS) + \
        len(PROTO_VERBS) * len(PROTOS)
    assert n >= 1000, n
