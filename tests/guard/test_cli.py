"""The keyguard command line: output, exit codes, secrets, and no pyspark on its path."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keyguard.guard.cli import app

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
VALUE_V1 = REPO / "schemas/subjects/pageviews_per_region-value/v1.avsc"
runner = CliRunner()
COLUMNS = ["--columns", "b STRING, a INT, amount DECIMAL(10, 2)", "--primary-key", "b,a"]


def run(*args: str, **kw):
    return runner.invoke(app, list(args), catch_exceptions=False, **kw)


@pytest.fixture
def schemas(tmp_path, monkeypatch):
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "schemas"


def _variant(tmp_path: Path, src: Path, name: str, mutate) -> Path:
    doc = json.loads(src.read_text())
    mutate(doc)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


def test_encode_prints_flink_json_key_in_primary_key_order():
    r = run("encode", "--key-format", "json", "--value-format", "json",
            *COLUMNS, "--row", '{"a": 1, "b": "B1", "amount": "1000.00"}', "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert bytes.fromhex(out["key"]["hex"]) == b'{"b":"B1","a":1}'
    assert bytes.fromhex(out["value"]["hex"]) == b'{"b":"B1","a":1,"amount":1E+3}'


def test_encode_shows_the_murmur2_partition():
    from keyguard.formats.partitioner import partition_for

    r = run("encode", "--key-format", "json", "--value-format", "json",
            *COLUMNS, "--row", '{"a": 1, "b": "B1"}', "--partitions", "6", "--json")
    out = json.loads(r.output)
    assert out["partition"] == partition_for(b'{"b":"B1","a":1}', 6)


def test_decode_reverses_encode_and_reads_tombstones():
    r = run("encode", *COLUMNS, "--key-format", "csv", "--value-format", "avro",
            "--row", '{"a": 7, "b": "x,y", "amount": "2.50"}', "--json", "--encoding", "base64")
    out = json.loads(r.output)
    back = run("decode", *COLUMNS, "--key-format", "csv", "--value-format", "avro",
               "--encoding", "base64", "--key", out["key"]["base64"],
               "--value", out["value"]["base64"])
    assert json.loads(back.output) == {"op": "+U", "row": {"b": "x,y", "a": 7, "amount": "2.50"}}
    gone = run("decode", "--value-format", "json",
               *COLUMNS, "--key-format", "csv", "--encoding", "base64",
               "--key", out["key"]["base64"])
    assert json.loads(gone.output) == {"op": "-D", "row": {"b": "x,y", "a": 7, "amount": None}}


def test_null_primary_key_is_exit_2_naming_the_column():
    r = run("encode", "--key-format", "json", "--value-format", "json",
            *COLUMNS, "--row", '{"a": null, "b": "B1"}')
    assert r.exit_code == 2
    assert "'a' is null" in r.output


LENGTHS = ("--columns", "id INT NOT NULL, c CHAR(2), b BINARY(16), tm STRING, n INT NOT NULL",
           "--primary-key", "id")


def test_encode_writes_length_columns_and_left_out_ones_as_flink_does():
    """Flink 2.3's bytes (tests/formats/data/flink_golden: json-length, json-missing)."""
    r = run("encode", "--key-format", "json", "--value-format", "raw",
            "--columns", "id INT NOT NULL, c CHAR(4)", "--primary-key", "id", "-o",
            "value.fields-include=EXCEPT_KEY", "--row", '{"id": 1, "c": "ab"}', "--json")
    assert r.exit_code == 0, r.output
    assert bytes.fromhex(json.loads(r.output)["value"]["hex"]) == b"ab  "
    r = run("encode", "--key-format", "json", "--value-format", "json", *LENGTHS,
            "--row", '{"id": 1, "c": "D", "b": "AQ==", "n": 0}', "--json")
    assert r.exit_code == 0, r.output
    assert bytes.fromhex(json.loads(r.output)["value"]["hex"]) == (
        b'{"id":1,"c":"D ","b":"AQAAAAAAAAAAAAAAAAAAAA==","tm":null,"n":0}')


def test_a_not_null_column_left_out_is_exit_2_naming_it():
    r = run("encode", "--key-format", "json", "--value-format", "json", *LENGTHS,
            "--row", '{"id": 1, "c": "D"}')
    assert r.exit_code == 2
    assert "--row: NOT NULL column n missing" in r.output
    assert "Traceback" not in r.output


def test_unknown_format_option_is_exit_2_with_a_suggestion():
    r = run("encode", "--key-format", "json", "--value-format", "json",
            *COLUMNS, "--row", '{"a": 1, "b": "B1"}',
            "-o", "key.json.timestamp-format.standrd=ISO-8601")
    assert r.exit_code == 2
    assert "did you mean 'timestamp-format.standard'" in r.output


def test_diff_key_exit_codes(tmp_path):
    added = _variant(tmp_path, KEY_V1, "added.avsc", lambda d: d["fields"].append(
        {"name": "tenant", "type": ["null", "string"], "default": None}))
    assert run("diff", str(KEY_V1), str(KEY_V1), "--key").exit_code == 0
    r = run("diff", str(KEY_V1), str(added), "--key", "-f", "json")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["verdict"] == "breaking"
    assert all(f["witness"]["old_hex"] != f["witness"]["new_hex"]
               for f in doc["findings"] if f["severity"] == "breaking")


def test_diff_value_levels(tmp_path):
    narrowed = _variant(tmp_path, VALUE_V1, "narrow.avsc",
                        lambda d: d["fields"][1].update(type=["null", "int"]))
    assert run("diff", str(VALUE_V1), str(narrowed), "--level", "BACKWARD").exit_code == 1
    assert run("diff", str(VALUE_V1), str(narrowed), "--level", "FORWARD").exit_code == 0


def test_diff_needs_a_mode():
    r = run("diff", str(KEY_V1), str(KEY_V1))
    assert r.exit_code == 2 and "--key" in r.output


def test_check_with_config_file_and_junit_output(schemas, tmp_path):
    cand = _variant(tmp_path, KEY_V1, "cand.avsc", lambda d: d.update(doc="now documented"))
    cfg = tmp_path / "keyguard.toml"
    cfg.write_text(f'registry = "file://{schemas}"\n[[topics]]\nname = "pageviews_per_region"\n'
                   f'key-schema = "{cand.name}"\n')
    out = tmp_path / "report.xml"
    r = run("check", "--config", str(cfg), "-f", "junit", "--output", str(out))
    assert r.exit_code == 1
    import xml.etree.ElementTree as ET

    root = ET.parse(out).getroot()
    assert int(root.get("failures", 0)) >= 1 or root.find(".//failure") is not None


def test_config_file_refuses_secrets(schemas, tmp_path):
    cfg = tmp_path / "keyguard.toml"
    cfg.write_text('[kafka]\n"sasl.password" = "hunter2"\n')
    r = run("check", "--config", str(cfg))
    assert r.exit_code == 2
    assert "hunter2" not in r.output and "environment" in r.output


def test_unreachable_registry_is_exit_3_without_credentials(schemas):
    r = run("check", "--topic", "t", "--registry", "http://alice:s3cret@127.0.0.1:9",
            "--value-schema", str(VALUE_V1))
    assert r.exit_code == 3
    assert "s3cret" not in r.output and "alice" not in r.output


def test_check_against_git_ref(schemas, tmp_path):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, env=env)
    assert run("check", "--against", "git:main").exit_code == 0
    _variant(tmp_path, KEY_V1, "schemas/subjects/pageviews_per_region-key/v2.avsc",
             lambda d: d.update(namespace="com.example"))
    r = run("check", "--against", "git:main", "-f", "sarif")
    assert r.exit_code == 1
    sarif = json.loads(r.output)
    assert sarif["runs"][0]["results"]
    annotations = run("check", "--against", "git:main", "-f", "github").output
    assert "::error file=schemas/subjects/pageviews_per_region-key/v2.avsc," in annotations


def test_rules_lists_and_explains():
    r = run("rules")
    assert r.exit_code == 0 and "KG801" in r.output
    one = run("rules", "KG801")
    assert "compatibility level" in one.output
    assert run("rules", "KG999999").exit_code == 2


def test_cli_check_imports_neither_pyspark_nor_what_it_does_not_use(schemas):
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from keyguard.guard.cli import app\n"
        "r = CliRunner().invoke(app, ['check', '--topic', 'pageviews_per_region', "
        f"'--key-schema', {str(KEY_V1)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')))\n"
        "print(sorted(m for m in sys.modules if m in UNUSED))\n"
    )
    unused = ("keyguard.formats.avro_column_decoder", "keyguard.guard.render.locate",
              "keyguard.guard.suppress", "keyguard.guard.selection")
    out = subprocess.run([sys.executable, "-c", f"UNUSED = {unused!r}\n{code}"],
                         capture_output=True, text=True,
                         cwd=schemas.parent, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    heavy, modules = out.stdout.strip().splitlines()[-2:]
    assert heavy == "[]"
    # a text report of schemas without `keyguard: ignore` needs no batch decoder, no line
    # locator and no suppressions: start-up pays for what the run uses
    assert modules == "[]"


def test_cli_check_declares_no_class_that_generates_code_at_import(schemas):
    # A frozen dataclass compiles its methods and a NamedTuple its constructor and field
    # annotations when their module is imported: every `keyguard check` would pay for each.
    code = (
        "import dataclasses, sys\n"
        "from typer.testing import CliRunner\n"
        "from keyguard.guard.cli import app\n"
        "r = CliRunner().invoke(app, ['check', '--topic', 'pageviews_per_region', "
        f"'--key-schema', {str(KEY_V1)!r}, '--value-schema', {str(VALUE_V1)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "found = sorted(f'{n}.{c.__name__}' for n, m in list(sys.modules.items())\n"
        "               if n.startswith('keyguard') for c in vars(m).values()\n"
        "               if isinstance(c, type) and c.__module__ == n and (\n"
        "                   (dataclasses.is_dataclass(c) and '__dataclass_params__' in vars(c))\n"
        "                   or (issubclass(c, tuple) and hasattr(c, '_fields'))))\n"
        "print(len([n for n in sys.modules if n.startswith('keyguard')]), found)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=schemas.parent, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    loaded, found = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(loaded) > 40  # the check ran through formats and the guard
    assert found == "[]"


def test_check_scans_a_live_topic_with_bootstrap(kafka_bootstrap, tmp_path):
    """Real keys written with the PK in (region, id) order; a candidate in (id, region) order."""
    from broker import new_topic
    from confluent_kafka import Producer

    from keyguard.formats.json_schema import to_json_schema
    from keyguard.formats.sqltypes import parse_columns

    topic = new_topic(kafka_bootstrap, partitions=3, config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
    for i in range(5):
        producer.produce(topic, key=f'{{"region":"r{i}","id":{i}}}'.encode(), value=b"{}")
    assert producer.flush(15) == 0
    schema = tmp_path / "key.json"
    schema.write_text(json.dumps(to_json_schema(parse_columns("id INT NOT NULL, region STRING "
                                                              "NOT NULL").not_null())))
    (tmp_path / "empty").mkdir()
    args = ["check", "--topic", topic, "--registry", f"file://{tmp_path / 'empty'}",
            "--key-format", "json", "--value-format", "", "--key-schema", str(schema),
            "--bootstrap", kafka_bootstrap, "-f", "json"]
    r = run(*args)
    assert r.exit_code == 1, r.output
    (f,) = [f for f in json.loads(r.output)["findings"] if f["severity"] == "breaking"]
    assert f["rule"]["id"] == "KG013" and "5 of 5" in f["message"]
    assert bytes.fromhex(f["witness"]["old_hex"]).startswith(b'{"region"')


def test_encode_plain_avro_from_a_schema_file(tmp_path: Path) -> None:
    """Plain avro has no schema option: a schema file gives the table, whose bytes follow it."""
    key, value = tmp_path / "k.avsc", tmp_path / "v.avsc"
    key.write_text('{"type":"record","name":"k","fields":[{"name":"id","type":"string"}]}')
    value.write_text('{"type":"record","name":"v","fields":[{"name":"a","type":"int"},'
                     '{"name":"s","type":"string"}]}')
    r = run("encode", "--topic", "t", "--key-format", "json", "--value-format", "avro",
            "--key-schema", str(key), "--value-schema", str(value),
            "--row", '{"id": "x", "a": -1, "s": "hi"}', "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert bytes.fromhex(out["key"]["hex"]) == b'{"id":"x"}'
    assert bytes.fromhex(out["value"]["hex"]) == b"\x01\x04hi"  # zigzag(-1), len 2, "hi"
