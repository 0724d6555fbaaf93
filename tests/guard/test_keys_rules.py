"""The rule catalogue is data users select and ignore by ID: it must be complete and stable."""

from __future__ import annotations

import json
import re
from pathlib import Path

from keyguard.formats.codec import format_factory, format_names
from keyguard.guard.report import ANY_FAMILY, Category, Severity
from keyguard.guard.rules import RULES, all_rules, rule

#: Rules name key families by the formats' own `key_family`.
FAMILIES = {format_factory(name).key_family for name in format_names()}


def test_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in all_rules()]
    assert len(ids) == len(set(ids)) == len(RULES)
    assert all(re.fullmatch(r"KG\d{3}", i) for i in ids)
    assert rule("KG501").name == "confluent-schema-id-changed"


def test_every_rule_explains_itself() -> None:
    names = [r.name for r in all_rules()]
    assert len(names) == len(set(names))
    for r in all_rules():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.id
        assert r.summary.endswith(".") and len(r.why) > 40, r.id
        assert r.families == ANY_FAMILY or set(r.families) <= FAMILIES, r.id
        assert r.families, f"{r.id}: a key rule judges some key family"
        # KG9xx explain safe changes; everything else warns or blocks.
        assert (r.severity is Severity.INFO) == r.id.startswith("KG9"), r.id


def test_categories_follow_the_id_ranges() -> None:
    for r in all_rules():
        if r.id.startswith("KG6"):
            assert r.category is Category.KEY_PLACEMENT
        elif r.id.startswith("KG7"):
            assert r.category is Category.TOPIC
        else:
            assert r.category is Category.KEY_BYTES


def test_the_corpus_exercises_most_rules() -> None:
    corpus = json.loads((Path(__file__).parent / "key_evolutions.json").read_text())
    used = {i for c in corpus for i in c["rules"]}
    # KG000 must never be expected; KG701 needs topic facts (test_keys_placement covers it).
    assert set(RULES) - used - {"KG000", "KG701"} == set()
