"""Bad rule names wherever rules are selected or ignored: exit 2, the place, and a suggestion.

Each row is one CLI line (or config file) naming a rule or category that does not exist, or
naming it the wrong way; it must exit 2 before any registry is opened, name where the bad name
was given, and suggest the near names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from badinput import assert_rejected

from keyguard.formats.errors import EXIT_INVALID

SCHEMA = str(Path(__file__).resolve().parents[2]
             / "schemas/subjects/pageviews_per_region-key/v1.avsc")
# An unreachable registry: a bad rule name must be refused before it is ever asked.
CHECK = ["check", "--topic", "t", "--key-schema", SCHEMA, "--registry", "http://127.0.0.1:9"]
DIFF = ["diff", SCHEMA, SCHEMA, "--key"]

ROWS = [
    ("check --ignore typo", [*CHECK, "--ignore", "KG7O1"],
     "--ignore: unknown rule or category 'KG7O1' (did you mean KG701?"),
    ("check --ignore comma list", [*CHECK, "--ignore", "KG701,KG9999"],
     "unknown rule or category 'KG9999'"),
    ("check --ignore category typo", [*CHECK, "--ignore", "key-placment"],
     "did you mean key-placement?"),
    ("check --select typo", [*CHECK, "--select", "topik"],
     "--select: unknown rule or category 'topik' (did you mean topic?"),
    ("check --ignore nothing near", [*CHECK, "--ignore", "everything"],
     "the categories are key-bytes, key-placement, topic, value-compatibility"),
    ("check --ignore empty name in list", [*CHECK, "--ignore", "KG701,,bogus"],
     "unknown rule or category 'bogus'"),
    ("diff --ignore typo", [*DIFF, "--ignore", "KG1O1"], "did you mean KG101?"),
    ("diff --select typo", [*DIFF, "--select", "value-compat"], "unknown rule or category"),
    ("gate --ignore typo", ["check", "--against", "git:main", "--registry", "file://nowhere",
                            "--ignore", "KG5O1"], "did you mean KG501?"),
]


@pytest.mark.parametrize(("args", "says"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_rule_names_on_the_command_line(args: list[str], says: str) -> None:
    assert_rejected(args, EXIT_INVALID, "invalid-option", says=says)


CONFIGS = [
    ("global unknown", 'ignore = ["KG7O1"]\n', "keyguard.toml: ignore: unknown rule or "
     "category 'KG7O1' (did you mean KG701?"),
    ("per topic unknown", '[[topics]]\nname = "orders"\nignore = ["key-byts"]\n',
     "keyguard.toml: topics[0]: ignore: unknown rule or category 'key-byts' (did you mean "
     "key-bytes?"),
    ("not an array", 'ignore = "KG701"\n',
     "ignore must be an array of rule IDs or categories (strings), got str"),
    ("not strings", '[[topics]]\nname = "orders"\nignore = [701]\n',
     "topics[0]: ignore must be an array of rule IDs or categories (strings)"),
    ("misspelled key", 'ignores = ["KG701"]\n', "unknown key ignores (did you mean ignore?"),
]


@pytest.mark.parametrize(("toml", "says"), [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
def test_bad_rule_names_in_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           toml: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keyguard.toml").write_text(toml)
    assert_rejected(["check", "--config", "keyguard.toml"], EXIT_INVALID, "invalid-option",
                    says=says)


def test_rules_of_an_unknown_name_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    assert_rejected(["rules", "KG7O1"], EXIT_INVALID, "usage",
                    says="no rule or category 'KG7O1' (did you mean KG701?")
