"""A rule declares the key families it judges; the formats `keyguard rules` and SARIF list for it
are derived from the format catalogue, so they follow every format of those families."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from keyguard.formats.codec import format_factory, format_names
from keyguard.formats.errors import KeyguardError
from keyguard.guard.cli import app
from keyguard.guard.render.sarif import document
from keyguard.guard.report import ANY_FAMILY, Framing, Report
from keyguard.guard.rules import rule
from keyguard.guard.rules_catalogue import catalogue, formats_of

#: The modules of guard/keys whose rules belong to one body's key family (or two, text).
FAMILY_MODULES = {
    "keyguard.guard.keys.text.": {"json", "csv"},
    "keyguard.guard.keys.avro.": {"avro"},
    "keyguard.guard.keys.raw.": {"raw"},
    "keyguard.guard.keys.protobuf.": {"protobuf"},
}


def _derived(families: tuple[str, ...], framing: Framing) -> list[str]:
    """The formats of `families` whose frame carries what `framing` asks, read off each
    format's factory."""
    out = []
    for name in format_names():
        f = format_factory(name)
        if families != ANY_FAMILY and f.key_family not in families:
            continue
        if framing is Framing.SCHEMA_ID and not f.frame.carries_schema_id:
            continue
        if framing is Framing.MESSAGE_INDEX and not f.frame.indexed:
            continue
        if framing is Framing.ID_IN_HEADER and not _header_framing(f):
            continue
        out.append(name)
    return out if families else []


def test_keyguard_rules_shows_the_formats_derived_from_each_rules_families() -> None:
    shown = json.loads(CliRunner().invoke(app, ["rules", "-f", "json"]).output)
    assert [d["id"] for d in shown] == [r.id for r in catalogue()]
    for doc, r in zip(shown, catalogue(), strict=True):
        assert doc["formats"] == list(formats_of(r)) == _derived(r.families, r.framing), r.id


def _header_framing(factory: Any) -> bool:
    """Whether the format's `framing` option accepts a framing that puts the id in a header."""
    if not factory.frame.carries_schema_id:
        return False
    try:
        return bool(factory.frame_of({"framing": "confluent-header"}, "key").id_in_header)
    except KeyguardError:
        return False


def test_header_rule_lists_the_formats_that_can_put_the_id_in_a_header() -> None:
    assert formats_of(rule("KG913")) == ("avro-confluent", "json-registry", "protobuf-registry")
    assert formats_of(rule("KG503")) == formats_of(rule("KG501"))


def test_sarif_declares_the_same_formats_per_rule() -> None:
    run = document(Report(), rules=catalogue())["runs"][0]
    for declared, r in zip(run["tool"]["driver"]["rules"], catalogue(), strict=True):
        assert declared["id"] == r.id
        assert declared["properties"].get("formats", []) == _derived(r.families, r.framing)


def test_key_field_added_lists_the_protobuf_formats() -> None:
    (doc,) = json.loads(CliRunner().invoke(app, ["rules", "KG101", "-f", "json"]).output)
    assert doc["formats"] == ["avro", "avro-confluent", "csv", "json", "json-registry",
                              "protobuf", "protobuf-registry"]


def test_a_rule_lists_every_format_of_its_families_and_frames() -> None:
    assert "protobuf-registry" in formats_of(rule("KG016"))  # its keys carry schema ids too
    assert formats_of(rule("KG430")) == ("protobuf-registry",)  # the message index
    assert "avro-confluent" in formats_of(rule("KG904"))  # Avro binary writes no names
    assert "raw" not in formats_of(rule("KG203"))  # raw has no DECIMAL
    assert formats_of(rule("KG601")) == tuple(format_names())
    assert formats_of(rule("KG801")) == ()  # value compatibility: no key format


def test_a_rules_families_are_those_its_checks_judge() -> None:
    """A check in a family's module judges that family's keys only: the rule names a family of
    each such check, and no family none of them judges. A rule of every family has checks in
    no family's module (placement, the witness search, the frame)."""
    for r in catalogue():
        if not r.families:
            continue
        judged = [fams for check in r.checks for prefix, fams in FAMILY_MODULES.items()
                  if check.startswith(prefix)]
        if r.families == ANY_FAMILY:
            assert judged == [], r.id
            continue
        for fams in judged:
            assert fams & set(r.families), f"{r.id}: no family of {sorted(fams)}"
        if len(judged) == len(r.checks):
            assert set(r.families) <= set().union(*judged), r.id
