"""`--rules-of` / `rules-of`: where the registries differ, the gate follows the one chosen.

Each listed difference is taken from the registry's own conformance vector: under that
registry's rules keyguard answers as the vector expects, under Confluent's (the default) and
every other registry's it answers as Confluent does.
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.registry import CompatibilityAnswer, SchemaVersion
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.schemajson import loads_schema
from keyguard.guard.cli import app
from keyguard.guard.compat.registry_rules import RULES_OF
from keyguard.guard.values import judge_value

runner = CliRunner()
DATA = Path(__file__).parent / "data"
SHARED = Path(os.environ.get("KEYGUARD_CONFORMANCE_DIR",
                             Path(__file__).resolve().parents[3] / "shared" / "conformance"))
KNOWN = json.loads((Path(__file__).resolve().parents[2] / "guard" / "compat" /
                    "known_differences.json").read_text())
EXIT = {True: 0, False: 1, "invalid": 2}


def run(*args: str, **kw: Any) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False, **kw)


def _case(directory: Path, name: str, case_id: str) -> dict[str, Any]:
    text = (directory / name).read_text()
    cases = json.loads(text)["cases"] if name.endswith(".json") else \
        [json.loads(line) for line in text.splitlines() if line.strip()]
    return next(c for c in cases if c["id"] == case_id)


def _files(tmp_path: Path, case: dict[str, Any]) -> list[str]:
    """The case's schemas as files, oldest first, the candidate last."""
    old = case["writer_or_old"]
    history = old if case.get("old_is_history") else [old]
    suffix = ".proto" if case["schema_type"] == "PROTOBUF" else ".json"
    paths = []
    for i, schema in enumerate([*history, case["reader_or_new"]]):
        path = tmp_path / f"v{i + 1}{suffix}"
        path.write_text(schema if isinstance(schema, str) else json.dumps(schema))
        paths.append(str(path))
    return paths


def _diff_exit(files: list[str], case: dict[str, Any], *rules: str) -> int:
    r = run("diff", *files, "--level", case["level"], "--schema-type", case["schema_type"],
            *rules)
    assert r.exit_code in (0, 1, 2), r.output
    return int(r.exit_code)


#: One vector case per listed difference: (file, case id, the registry deciding it).
DIFFERENCES = [
    ("apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#14.BACKWARD", "apicurio"),
    ("apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#101.BACKWARD", "apicurio"),
    ("apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#104.FORWARD", "apicurio"),
    ("apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#42.BACKWARD", "apicurio"),
    ("apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#98.BACKWARD", "apicurio"),
    ("protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
     "testFieldNameChanged_ReturnsDetailedError", "apicurio"),
    ("protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
     "testBackwardCompatibility_FieldIdChanged_ReturnsDetailedError", "apicurio"),
    ("protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
     "testRpcSignatureChanged_ReturnsDetailedError", "apicurio"),
    ("protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
     "testForwardCompatibility_RemovedFieldWithoutReserve_Fails#FULL", "apicurio"),
    ("protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
     "testTransitiveCompatibility_RemovedFieldWithoutReserve_Fails#FORWARD_TRANSITIVE",
     "apicurio"),
    ("protobuf_conformance.json", "karapace.test_protobuf_compatibility."
     "test_compatibility_package", "karapace"),
    ("redpanda_jsonschema.jsonl", "redpanda.test_json_schema.compatibility_test_cases#11",
     "redpanda"),
    ("redpanda_jsonschema.jsonl", "redpanda.test_json_schema.compatibility_test_cases#58",
     "redpanda"),
    ("redpanda_jsonschema.jsonl", "redpanda.test_json_schema.compatibility_test_cases#96",
     "redpanda"),
    ("redpanda_jsonschema.jsonl", "redpanda.test_json_schema.compatibility_test_cases#107",
     "redpanda"),
    ("karapace.jsonl", "test_jsonschema_compatibility.test_true_schema_is_compatible_with_"
     "object#233", "karapace"),
    ("karapace.jsonl", "test_jsonschema_compatibility.test_true_and_false_schemas#193",
     "karapace"),
    ("karapace.jsonl", "test_jsonschema_compatibility.test_boolean_schemas_are_backward_"
     "compatible#2", "karapace"),
]


@pytest.mark.parametrize(("name", "case_id", "choice"), DIFFERENCES,
                         ids=[c for _, c, _ in DIFFERENCES])
def test_a_listed_difference_follows_the_chosen_registry_only(tmp_path: Path, name: str,
                                                              case_id: str, choice: str) -> None:
    directory = SHARED if name == "karapace.jsonl" else DATA
    if not (directory / name).is_file():
        pytest.skip(f"conformance vectors not found in {directory}")
    case = _case(directory, name, case_id)
    assert KNOWN[case_id]["rules_of"] == choice
    files = _files(tmp_path, case)
    expected = EXIT[case["expected_compatible"]]
    confluent = _diff_exit(files, case)
    assert confluent != expected  # the difference the vector records
    assert _diff_exit(files, case, "--rules-of", "confluent") == confluent
    assert _diff_exit(files, case, "--rules-of", choice.upper()) == expected
    for other in set(RULES_OF) - {"confluent", choice}:
        assert _diff_exit(files, case, "--rules-of", other) == confluent, other


def test_a_field_removed_with_its_number_and_name_reserved_passes_apicurios_rules(
        tmp_path: Path) -> None:
    case = _case(DATA, "protobuf_conformance.json", "apicurio.ProtobufCompatibilityCheckerTest."
                 "testForwardCompatibility_RemovedFieldWithoutReserve_Fails#FULL")
    new = case["reader_or_new"]
    for reserved, exit_code in (("reserved 3;\n    reserved \"email\";", 0),
                                ("reserved 3;", 1), ("reserved \"email\";", 1)):
        case["reader_or_new"] = new.replace("{\n", "{\n    " + reserved + "\n", 1)
        files = _files(tmp_path, case)
        r = run("diff", *files, "--level", "FULL", "--schema-type", "PROTOBUF",
                "--rules-of", "apicurio")
        assert r.exit_code == exit_code, (reserved, r.output)
        if exit_code:
            assert "FIELD_REMOVED_WITHOUT_RESERVE" in r.output


def test_reports_name_the_rules_applied(tmp_path: Path) -> None:
    case = _case(DATA, "apicurio_jsonschema.jsonl", "apicurio.compatibility-test-data#14.BACKWARD")
    files = _files(tmp_path, case)
    level = ["--level", "BACKWARD", "--schema-type", "JSON"]
    text = run("diff", *files, *level, "--rules-of", "apicurio")
    assert text.exit_code == 1
    assert "at BACKWARD by Apicurio's rules" in text.output
    assert "STRING_TYPE_FORMAT_CHANGED" in text.output
    report = json.loads(run("diff", *files, *level, "--rules-of", "apicurio", "-f", "json").output)
    assert report["checked"] == [f"{files[0]} -> {files[1]} at BACKWARD by Apicurio's rules"]
    sarif = json.loads(run("diff", *files, *level, "-f", "sarif").output)
    assert sarif["runs"][0]["properties"]["checked"] == [
        f"{files[0]} -> {files[1]} at BACKWARD by Confluent's rules"]


def test_a_bad_choice_is_exit_2_naming_the_accepted_ones(tmp_path: Path) -> None:
    files = _files(tmp_path, {"schema_type": "JSON", "writer_or_old": {}, "reader_or_new": {}})
    r = run("diff", *files, "--level", "BACKWARD", "--rules-of", "karapaec")
    assert r.exit_code == 2
    assert "confluent, apicurio, karapace, redpanda" in r.output
    assert "did you mean 'karapace'" in r.output
    assert "Traceback" not in r.output
    key = run("diff", *files, "--key", "--rules-of", "karapace")
    assert key.exit_code == 2 and "drop --rules-of" in key.output
    config = tmp_path / "keyguard.toml"
    config.write_text('registry = "file://schemas"\nrules-of = "schema-registry"\n')
    r = run("check", "--config", str(config))
    assert r.exit_code == 2
    assert "rules-of" in r.output and "confluent, apicurio, karapace, redpanda" in r.output


# The format change of Apicurio's case 14 in a topic's value schema, in a file registry.
KEY = {"type": "object", "properties": {"id": {"type": "string"}}}
V1 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"id": {"type": "string"}, "at": {"type": "string", "format": "date-time"}}}
V2 = {**V1, "properties": {**V1["properties"], "at": {"type": "string", "format": "date"}}}


def _registry(root: Path) -> str:
    registry = FileRegistry(root / "schemas")
    registry.register("orders-key", json.dumps(KEY), "JSON")
    registry.register("orders-value", json.dumps(V1), "JSON")
    return f"file://{root / 'schemas'}"


def test_check_follows_the_flag_over_the_config_file(tmp_path: Path) -> None:
    url = _registry(tmp_path)
    candidate = tmp_path / "value.json"
    candidate.write_text(json.dumps(V2))
    topic = ["check", "--topic", "orders", "--registry", url, "--key-format", "json-registry",
             "--value-format", "json-registry", "--value-schema", str(candidate)]
    default = run(*topic)
    assert default.exit_code == 0, default.output
    assert "orders: value orders-value at BACKWARD by Confluent's rules" in default.output
    apicurio = run(*topic, "--rules-of", "apicurio")
    assert apicurio.exit_code == 1, apicurio.output
    assert "by Apicurio's rules" in apicurio.output and "STRING_TYPE_FORMAT" in apicurio.output
    config = tmp_path / "keyguard.toml"
    config.write_text('rules-of = "apicurio"\n')
    assert run(*topic, "--config", str(config)).exit_code == 1
    assert run(*topic, "--config", str(config), "--rules-of", "confluent").exit_code == 0


def test_the_git_gate_follows_the_choice(tmp_path: Path) -> None:
    _registry(tmp_path)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, env=env)
    FileRegistry(tmp_path / "schemas").register("orders-value", json.dumps(V2), "JSON")
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert run("check", "--against", "git:main").exit_code == 0
        gated = run("check", "--against", "git:main", "--rules-of", "apicurio", "-f", "json")
    finally:
        os.chdir(old)
    assert gated.exit_code == 1, gated.output
    report = json.loads(gated.output)
    assert "orders: value orders-value at BACKWARD by Apicurio's rules" in report["checked"]
    assert {f["rule"]["id"] for f in report["findings"]} == {"KG801"}


def test_the_registrys_own_answer_is_weighed_against_the_chosen_rules() -> None:
    """KG802: a Karapace registry passes a package change; under Karapace's rules keyguard
    agrees, under Confluent's it reports both its own verdict and the disagreement."""
    case = _case(DATA, "protobuf_conformance.json",
                 "karapace.test_protobuf_compatibility.test_compatibility_package")
    history = [SchemaVersion("t-value", 1, 1, case["writer_or_old"], "PROTOBUF")]
    candidate = SchemaText("PROTOBUF", case["reader_or_new"], "new.proto")
    answer = CompatibilityAnswer(True)
    assert judge_value("t-value", candidate, history, "BACKWARD", answer=answer,
                       rules="karapace") == []
    confluent = judge_value("t-value", candidate, history, "BACKWARD", answer=answer)
    assert {f.rule.id for f in confluent} == {"KG801", "KG802"}
    kg802 = next(f for f in confluent if f.rule.id == "KG802")
    assert "keyguard says incompatible at BACKWARD by Confluent's rules" in kg802.message


def test_the_draft_guess_keeps_a_draft_07_schema_as_it_is(tmp_path: Path) -> None:
    """Redpanda guesses a draft only where draft-07 refuses the schema: a numeric
    `exclusiveMaximum` stays draft-07's bound (draft-04 would refuse it)."""
    schema = {"type": "number", "exclusiveMaximum": 10}
    files = _files(tmp_path, {"schema_type": "JSON", "writer_or_old": schema,
                              "reader_or_new": {"type": "number", "maximum": 10}})
    for choice in ("confluent", "redpanda"):
        json_files = [*files, "--schema-type", "JSON", "--rules-of", choice]
        backward = run("diff", *json_files, "--level", "BACKWARD")
        assert backward.exit_code == 0, backward.output
        r = run("diff", *json_files, "--level", "FORWARD", "-f", "json")
        assert r.exit_code == 1, r.output
        found = json.loads(r.output)["findings"]
        assert [f["path"] for f in found] == ["/exclusiveMaximum"], found
    assert loads_schema(Path(files[0]).read_text(), "x") == schema


def test_the_option_names_every_registry_the_checkers_know():
    """`--rules-of`'s choices are spelled out in `keyguard.guard.options` (so that `--help`
    loads no checker); they must be the registries `registry_rules` defines, in its order."""
    from keyguard.guard.options import RULES_OF as OPTION

    assert OPTION.choices == tuple(RULES_OF)
