"""Value checks: the subject's level, and the registry's own answer when it disagrees."""

import json

from keyguard.formats.registry import CompatibilityAnswer, SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.values import check_value

V1 = {"type": "record", "name": "v", "fields": [{"name": "pv", "type": "long"}]}
ADDED = {**V1, "fields": [*V1["fields"], {"name": "uv", "type": ["null", "long"],
                                           "default": None}]}
HISTORY = [SchemaVersion("t-value", 1, 7, json.dumps(V1))]


class AnsweringRegistry:
    """A registry whose compatibility endpoint says what the test wants."""

    name = "https://sr.example"

    def __init__(self, compatible: bool) -> None:
        self.answer = CompatibilityAnswer(compatible, ("field uv: reader has no default",))
        self.asked: list[str] = []

    def check_compatibility(self, subject, schema, schema_type="AVRO"):
        self.asked.append(subject)
        return self.answer


def test_agreement_adds_nothing():
    reg = AnsweringRegistry(compatible=True)
    findings = check_value("t-value", SchemaText("AVRO", json.dumps(ADDED), "c"), HISTORY,
                           "BACKWARD", registry=reg)
    assert findings == [] and reg.asked == ["t-value"]


def test_disagreement_is_reported_with_the_registrys_messages():
    reg = AnsweringRegistry(compatible=False)
    (f,) = check_value("t-value", SchemaText("AVRO", json.dumps(ADDED), "c"), HISTORY,
                       "BACKWARD", registry=reg)
    assert f.rule.id == "KG802" and f.effective_severity.value == "warning"
    assert "says incompatible, keyguard says compatible" in f.message
    assert "reader has no default" in f.message


def test_a_schema_type_change_is_incompatible():
    (f,) = check_value("t-value", SchemaText("JSON", '{"type": "object"}', "c"), HISTORY,
                       "BACKWARD")
    assert f.rule.id == "KG801" and "AVRO" in f.message
