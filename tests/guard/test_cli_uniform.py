"""One CLI: every verb has the same format defaults, offers the catalog's formats and schema
types, renders a Report in every report format, and uses a Flink DDL's connection options
(registry url, properties.*) only with --flink-ddl-connections."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer.main
from typer.testing import CliRunner

from keyguard.formats.catalog import BUILTIN_FORMATS, DEFAULT_FORMATS
from keyguard.formats.codec import format_factory, format_names
from keyguard.guard.cli import app, command_function
from keyguard.guard.options import KEY_FORMAT, VALUE_FORMAT
from keyguard.guard.render import FORMATS
from keyguard.sparkio.cli_commands import migrate

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

#: Every verb that takes key and value formats, and its command function.
VERBS = {name: command_function(name) for name in ("check", "diff", "encode", "decode", "audit")}
VERBS["migrate"] = migrate


def params(verb: str) -> dict[str, click.Parameter]:
    one = typer.Typer()
    one.command(verb)(VERBS[verb])
    return {p.name: p for p in typer.main.get_command(one).params if p.name}


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


# --- the same defaults, the catalog's choices ----------------------------------------------

#: The flags that name a key or a value format, per verb, with the role each names.
FORMAT_FLAGS = {
    "check": {"key_format": "key", "value_format": "value"},
    "diff": {"key_format": "key"},
    "encode": {"key_format": "key", "value_format": "value"},
    "decode": {"key_format": "key", "value_format": "value"},
    "audit": {"key_format": "key", "value_format": "value"},
    "migrate": {"value_format": "value"},
}


@pytest.mark.parametrize(("verb", "flag"), [(v, f) for v, flags in FORMAT_FLAGS.items()
                                            for f in flags])
def test_every_verb_has_the_same_format_default_and_lists_the_catalog(verb: str,
                                                                      flag: str) -> None:
    param = params(verb)[flag]
    declared = (KEY_FORMAT if FORMAT_FLAGS[verb][flag] == "key" else VALUE_FORMAT).default_value
    help_text = " ".join(str(getattr(param, "help", "")).split())
    if param.default is None:  # the command applies the declaration itself, and says so
        assert f"Default: {declared}" in help_text or f"else {declared}" in help_text
    else:
        assert param.default == declared
    for name in BUILTIN_FORMATS:
        assert name in help_text, f"{verb} --{flag}: {name} missing"


def test_the_one_default_is_the_documented_one() -> None:
    """README: check's key and value formats default to avro-confluent, and the first screen's
    `diff --key` shows avro-confluent ids."""
    assert KEY_FORMAT.default_value == VALUE_FORMAT.default_value == "avro-confluent"
    assert "default to `avro-confluent`" in (REPO / "README.md").read_text()


def test_the_catalogs_schema_types_cover_every_format() -> None:
    assert {format_factory(n).schema_type for n in format_names()} == set(DEFAULT_FORMATS)


@pytest.mark.parametrize("verb", ["check", "diff", "encode", "decode", "audit"])
def test_schema_type_offers_every_schema_type(verb: str) -> None:
    param = params(verb)["schema_type"]
    for kind in DEFAULT_FORMATS:
        assert kind.lower() in str(getattr(param, "help", ""))


@pytest.mark.parametrize("verb", ["check", "diff", "audit"])
def test_every_verb_that_renders_a_report_offers_every_report_format(verb: str) -> None:
    help_text = str(getattr(params(verb)["fmt"], "help", ""))
    assert all(f in help_text for f in FORMATS)
    r = run(verb, "--format", "nope")
    assert r.exit_code == 2
    assert f"use one of {', '.join(FORMATS)}" in r.output


def test_migrate_says_it_renders_no_report() -> None:
    assert "not a guard Report" in " ".join(str(getattr(params("migrate")["fmt"], "help",
                                                           "")).split())
    r = runner.invoke(app, ["migrate", "--bootstrap", "127.0.0.1:1", "--topic", "t",
                            "--columns", "a INT", "--old-key-format", "json", "--format", "sarif"],
                      catch_exceptions=False)
    assert r.exit_code == 2
    assert "migrate reports a migration, not a guard Report" in r.output


PROTO_V1 = 'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; string note = 2; }\n'
PROTO_V2 = ('syntax = "proto3";\npackage shop;\n'
            'message Order { int64 id = 1; string note = 2; optional int32 qty = 3; }\n')


def test_diff_schema_type_protobuf(tmp_path: Path) -> None:
    (tmp_path / "v1.proto").write_text(PROTO_V1)
    (tmp_path / "v2.proto").write_text(PROTO_V2)
    files = [str(tmp_path / "v1.proto"), str(tmp_path / "v2.proto")]
    safe = run("diff", *files, "--level", "BACKWARD", "--schema-type", "protobuf")
    assert safe.exit_code == 0, safe.output
    keys = run("diff", *files, "--key", "--key-format", "protobuf-registry",
               "--schema-type", "PROTOBUF")
    assert keys.exit_code == 1, keys.output  # a new key field: every key's bytes change
    assert "KG" in keys.output


# --- a Flink DDL's connection options: only when asked -------------------------------------

class Listener:
    """A loopback port that counts the connections made to it and closes each at once."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    one = Listener()
    yield one
    one.sock.close()


DDL = """CREATE TABLE pageviews_per_region (
  user_region STRING,
  pv BIGINT,
  uv BIGINT,
  updated TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  PRIMARY KEY (user_region) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{topic}',
  'properties.bootstrap.servers' = '127.0.0.1:{port}',
  'key.format' = 'avro-confluent',
  'key.avro-confluent.url' = 'http://127.0.0.1:{port}',
  'key.avro-confluent.retries' = '0',
  'key.avro-confluent.timeout' = '2s',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://127.0.0.1:{port}',
  'value.avro-confluent.retries' = '0',
  'value.avro-confluent.timeout' = '2s'
);
"""
ROW = '{"user_region": "EMEA", "pv": 1, "uv": 2}'
#: The key {"user_region": "EMEA"} under the registered key schema (schemas/, id 1300494881).
KEY_HEX = "004d83fa2108454d4541"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: Listener) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pv.sql").write_text(DDL.format(topic="pageviews_per_region",
                                                port=listener.port))
    return tmp_path


IGNORED = ("pv.sql: connection options key.avro-confluent.url, key.avro-confluent.retries, "
           "key.avro-confluent.timeout, value.avro-confluent.url, value.avro-confluent.retries, "
           "value.avro-confluent.timeout, properties.bootstrap.servers ignored")

#: Each verb on the DDL, with what it needs beside it; the registry is ./schemas, the default.
DDL_RUNS = {
    "check": ("check", "--flink-ddl", "pv.sql"),
    "encode": ("encode", "--flink-ddl", "pv.sql", "--row", ROW),
    "decode": ("decode", "--flink-ddl", "pv.sql", "--key", KEY_HEX),
}


@pytest.mark.parametrize("verb", list(DDL_RUNS))
def test_a_ddls_connections_are_used_only_when_asked(workdir: Path, listener: Listener,
                                                     verb: str) -> None:
    r = run(*DDL_RUNS[verb])
    assert r.exit_code == 0, r.output
    assert listener.connections == 0
    assert r.stderr.count(IGNORED) == 1
    assert r.stderr.count("metadata column updated ignored") == 1
    asked = run(*DDL_RUNS[verb], "--flink-ddl-connections")
    assert asked.exit_code == 3, asked.output  # the DDL's registry: it answers nothing
    assert listener.connections >= 1
    assert "ignored: " not in asked.stderr.replace("metadata column updated ignored: ", "")


def test_diff_connects_to_nothing_and_notes_a_ddl_given_twice_once(workdir: Path,
                                                                    listener: Listener) -> None:
    r = run("diff", "--key", "--old-flink-ddl", "pv.sql", "--flink-ddl", "pv.sql",
            "--partitions", "6", "--new-partitions", "12")
    assert r.exit_code == 1, r.output  # the keys move: a new partition count
    assert listener.connections == 0
    assert r.stderr.count("metadata column updated ignored") == 1
    assert r.stderr.count("ignored: diff reads no registry and no broker") == 1


def test_the_config_files_ddl_follows_the_same_rule(workdir: Path, listener: Listener) -> None:
    (workdir / "keyguard.toml").write_text('[[topics]]\nflink-ddl = "pv.sql"\n')
    r = run("check", "--config", "keyguard.toml")
    assert r.exit_code == 0, r.output
    assert listener.connections == 0
    assert r.stderr.count(IGNORED) == 1
    asked = run("check", "--config", "keyguard.toml", "--flink-ddl-connections")
    assert asked.exit_code == 3, asked.output
    assert listener.connections >= 1


def test_without_a_registry_the_error_says_what_to_give(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./schemas here
    r = run("encode", "--columns", "k STRING NOT NULL, v INT", "--primary-key", "k",
            "--row", '{"k": "a", "v": 1}')
    assert r.exit_code == 2
    assert "avro-confluent reads a schema registry and none is named" in r.output
    assert "--key-format json" in r.output


def test_audit_and_migrate_ignore_a_ddls_connections(workdir: Path, listener: Listener,
                                                     kafka_bootstrap: str) -> None:
    from broker import new_topic

    topic = new_topic(kafka_bootstrap, partitions=2, config={"cleanup.policy": "compact"})
    (workdir / "pv.sql").write_text(DDL.format(topic=topic, port=listener.port))
    audit = run("audit", "--flink-ddl", "pv.sql", "--bootstrap", kafka_bootstrap)
    assert audit.exit_code == 0, audit.output
    assert audit.stderr.count(IGNORED) == 1
    junit = run("audit", "--flink-ddl", "pv.sql", "--bootstrap", kafka_bootstrap,
                "--format", "junit")  # every report format, those audit had not offered too
    assert junit.exit_code == 0, junit.output
    assert "<testsuites" in junit.stdout
    github = run("audit", "--flink-ddl", "pv.sql", "--bootstrap", kafka_bootstrap,
                 "--format", "github")
    assert github.exit_code == 0, github.output
    assert "::error" not in github.stdout  # a clean topic: no annotation
    state = str(workdir / "state.json")
    moved = runner.invoke(app, ["migrate", "--flink-ddl", "pv.sql", "--old-flink-ddl", "pv.sql",
                                "--new-partitions", "4", "--bootstrap", kafka_bootstrap,
                                "--state", state, "--dry-run"], catch_exceptions=False)
    assert moved.exit_code == 0, moved.output
    assert moved.stderr.count(IGNORED) == 1
    assert moved.stderr.count("metadata column updated ignored") == 1
    assert listener.connections == 0
    asked = run("audit", "--flink-ddl", "pv.sql", "--bootstrap", kafka_bootstrap,
                "--flink-ddl-connections")
    assert asked.exit_code == 3, asked.output
    assert listener.connections >= 1


@pytest.mark.parametrize("args", [
    ("check", "--topic", "t"),
    ("encode", "--columns", "k STRING NOT NULL", "--primary-key", "k", "--row", '{"k": "a"}'),
    ("decode", "--columns", "k STRING NOT NULL", "--primary-key", "k", "--key", "00"),
    ("audit", "--topic", "t", "--bootstrap", "127.0.0.1:1", "--columns", "k STRING NOT NULL",
     "--primary-key", "k"),
    ("migrate", "--topic", "t", "--bootstrap", "127.0.0.1:1", "--columns", "k STRING",
     "--old-key-format", "json", "--primary-key", "k"),
], ids=lambda a: a[0])
def test_ddl_connections_without_a_ddl_is_a_usage_error(workdir: Path, args: tuple[str, ...]
                                                        ) -> None:
    r = runner.invoke(app, [*args, "--flink-ddl-connections"], catch_exceptions=False)
    assert r.exit_code == 2, r.output
    assert "--flink-ddl-connections uses a Flink DDL's connection options" in r.output


def test_check_scans_the_ddls_brokers_only_when_asked(workdir: Path, kafka_bootstrap: str
                                                      ) -> None:
    from broker import new_topic

    topic = new_topic(kafka_bootstrap, partitions=2, config={"cleanup.policy": "compact"})
    for role in ("key", "value"):  # the sample subjects, under this topic's names
        shutil.copytree(workdir / f"schemas/subjects/pageviews_per_region-{role}",
                        workdir / f"schemas/subjects/{topic}-{role}")
    (workdir / "pv.sql").write_text(DDL.format(topic=topic, port=1).replace(
        "127.0.0.1:1'", f"{kafka_bootstrap}'", 1))
    unscanned = run("check", "--flink-ddl", "pv.sql", "-f", "json")
    assert unscanned.exit_code == 0, unscanned.output
    assert "give --bootstrap to scan the topic" in unscanned.stdout
    scanned = run("check", "--flink-ddl", "pv.sql", "--registry", "file://schemas",
                  "--flink-ddl-connections", "-f", "json")
    assert scanned.exit_code == 0, scanned.output
    assert "give --bootstrap to scan the topic" not in scanned.stdout
