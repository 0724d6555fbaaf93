"""FileRegistry: the layout, stable and pinned ids, canonical lookup, and reading a git ref."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from keyguard.formats.errors import RegistryError, SchemaError
from keyguard.formats.registry import Registry
from keyguard.formats.registry.file import FileRegistry, canonical_form, derived_schema_id

V1 = {"type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated",
      "fields": [{"name": "user_region", "type": "string"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "shard", "type": ["null", "int"],
                                        "default": None}]}
S = "pageviews_per_region-key"


def text(schema: object, **kw: object) -> str:
    return json.dumps(schema, **kw)  # type: ignore[arg-type]


def test_layout_round_trip(tmp_path):
    reg = FileRegistry(tmp_path)
    assert isinstance(reg, Registry)
    assert reg.subjects() == [] and reg.versions(S) == [] and reg.lookup(S, text(V1)) is None
    id1 = reg.register(S, text(V1))
    id2 = reg.register(S, text(V2))
    assert sorted(p.name for p in (tmp_path / "subjects" / S).iterdir()) == ["v1.avsc", "v2.avsc"]
    assert reg.subjects() == [S] and reg.versions(S) == [1, 2]
    latest = reg.get_version(S)
    assert (latest.version, latest.schema_id, json.loads(latest.schema)) == (2, id2, V2)
    assert [v.schema_id for v in reg.all_versions(S)] == [id1, id2]
    assert reg.get_version(S, 1).schema_id == id1 and reg.get_by_id(id2)[0] == "AVRO"
    assert reg.compatibility(S) == "BACKWARD" and reg.check_compatibility(S, text(V1)) is None
    with pytest.raises(RegistryError, match="no version 9"):
        reg.get_version(S, 9)
    with pytest.raises(RegistryError, match="not found"):
        reg.get_version("nope")
    with pytest.raises(RegistryError, match="no schema with id"):
        reg.get_by_id(12345)


def test_register_is_idempotent_and_lookup_canonical(tmp_path):
    reg = FileRegistry(tmp_path)
    schema_id = reg.register(S, text(V1))
    # other whitespace, key order, a short name with a namespace, {"type": "string"}
    same = {"fields": [{"type": {"type": "string"}, "name": "user_region"}],
            "name": "org.apache.flink.avro.generated.record", "type": "record"}
    assert reg.register(S, text(same, indent=4)) == schema_id
    assert reg.versions(S) == [1]
    found = reg.lookup(S, text(same))
    assert found is not None and found.version == 1
    assert reg.lookup(S, text(V1), "JSON") is None


def test_ids_stable_across_instances_and_subjects(tmp_path):
    a, b = FileRegistry(tmp_path / "a"), FileRegistry(tmp_path / "b")
    assert a.register(S, text(V1)) == b.register(S, text(V1, indent=2)) == \
        derived_schema_id(text(V1))
    assert a.register("other-key", text(V1)) == a.get_version(S).schema_id
    assert 0 < derived_schema_id(text(V1)) < 2**31
    # what the canonical form keeps: logical types and defaults change the id
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    assert derived_schema_id(text(dec)) != derived_schema_id(text({**dec, "scale": 4}))
    assert derived_schema_id(text(V2)) != derived_schema_id(
        text({**V2, "fields": [V1["fields"][0], {"name": "shard", "type": ["null", "int"]}]}))
    assert derived_schema_id('{"type": "string"}', "JSON") != derived_schema_id('"string"')


def test_pinned_ids(tmp_path):
    reg = FileRegistry(tmp_path)
    sub = tmp_path / "subjects" / S
    sub.mkdir(parents=True)
    (sub / "v1.avsc").write_text(text(V1))
    (sub / "v3.avsc").write_text(text(V2))  # version 2 was deleted in the exported registry
    (sub / "ids.json").write_text('{"1": 17, "3": 42}')
    assert [(v.version, v.schema_id) for v in reg.all_versions(S)] == [(1, 17), (3, 42)]
    assert reg.get_by_id(42) == ("AVRO", text(V2))
    assert reg.register(S, text(V1)) == 17
    # the same schema in another subject keeps the pinned id, as Confluent would, and pins it
    assert reg.register("other-value", text(V2)) == 42
    assert json.loads((tmp_path / "subjects" / "other-value" / "ids.json").read_text()) == \
        {"1": 42}
    assert FileRegistry(tmp_path).get_version("other-value").schema_id == 42
    assert reg.register(S, text({**V1, "doc": "new"})) == derived_schema_id(
        text({**V1, "doc": "new"}))
    assert reg.versions(S) == [1, 3, 4]


def test_compatibility_levels(tmp_path):
    reg = FileRegistry(tmp_path)
    reg.set_compatibility("full")
    assert reg.compatibility(S) == "FULL"
    reg.set_compatibility("NONE", S)
    assert reg.compatibility(S) == "NONE" and reg.compatibility("other") == "FULL"
    (tmp_path / "config.json").write_text('{"compatibility": "SOMETIMES"}')
    with pytest.raises(RegistryError, match=r"config\.json"):
        reg.compatibility("other")


def test_json_schema_and_subject_names(tmp_path):
    reg = FileRegistry(tmp_path)
    odd = "team/orders:key"
    reg.register(odd, '{"type": "object", "properties": {"id": {"type": "integer"}}}', "JSON")
    assert reg.subjects() == [odd] and reg.get_version(odd).schema_type == "JSON"
    assert (tmp_path / "subjects" / "team%2Forders%3Akey" / "v1.json").exists()
    with pytest.raises(RegistryError):
        reg.register("..", text(V1))


def test_malformed_files_name_themselves(tmp_path):
    reg = FileRegistry(tmp_path)
    sub = tmp_path / "subjects" / S
    sub.mkdir(parents=True)
    (sub / "v1.avsc").write_text('{"type": "record", "name": "r", "fields": [')
    with pytest.raises(SchemaError, match=r"v1\.avsc.*not valid JSON"):
        reg.get_version(S)
    (sub / "v1.avsc").write_text('{"type": "record", "name": "r", "fields": [{"name": "a"}]}')
    with pytest.raises(SchemaError, match=r"v1\.avsc.*not a valid Avro schema"):
        reg.all_versions(S)
    (sub / "v1.avsc").write_text(text(V1))
    (sub / "ids.json").write_text('{"1": "x"}')
    with pytest.raises(RegistryError, match=r"ids\.json"):
        reg.get_version(S)
    (sub / "ids.json").unlink()
    (sub / "v1.json").write_text("{}")
    with pytest.raises(SchemaError, match="stored twice"):
        reg.versions(S)
    with pytest.raises(SchemaError, match="not a valid Avro"):
        canonical_form('{"type": "nonsense"}')


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_reading_a_git_ref(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "README").write_text("x")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "before the schemas")
    live = FileRegistry(repo / "schemas")
    id1 = live.register(S, text(V1))
    (repo / "schemas" / "subjects" / S / "ids.json").write_text('{"1": 7}')
    git(repo, "add", "schemas")
    git(repo, "commit", "-qm", "v1")
    live.register(S, text(V2))
    git(repo, "add", "schemas")
    git(repo, "commit", "-qm", "v2")
    (repo / "schemas" / "subjects" / S / "v3.avsc").write_text(text({**V1, "doc": "wip"}))

    at_v1 = FileRegistry.at_git_ref(repo, "HEAD~1", "schemas")
    assert at_v1.name == "git:HEAD~1:schemas"
    assert isinstance(at_v1, Registry)
    assert at_v1.subjects() == [S] and at_v1.versions(S) == [1]
    assert at_v1.get_version(S).schema_id == 7 and id1 != 7
    assert at_v1.get_by_id(7) == ("AVRO", text(V1))
    assert FileRegistry.at_git_ref(repo, "HEAD", "schemas").versions(S) == [1, 2]
    assert live.versions(S) == [1, 2, 3]  # the working tree, uncommitted file included
    assert FileRegistry.at_git_ref(repo, "HEAD~2", "schemas").subjects() == []
    with pytest.raises(RegistryError, match="read-only"):
        at_v1.register(S, text(V2))
    with pytest.raises(RegistryError, match="no-such-branch"):
        FileRegistry.at_git_ref(repo, "no-such-branch")
    # from a subdirectory of the repository, paths are relative to it
    assert FileRegistry.at_git_ref(repo / "schemas", "HEAD", ".").versions(S) == [1, 2]
