"""The README tells the truth: its option tables and its test command are generated or shared."""

from pathlib import Path

from keyguard.sparkio.docs import render

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_option_tables_match_the_declarations():
    assert render(README) == README, "run: python -m keyguard.sparkio.docs README.md"


def _commands() -> list[str]:
    blocks = README.split("```bash\n")[1:3]
    return [b.split("\n```")[0].strip() for b in blocks]


def test_readme_opens_with_the_two_commands():
    demo, tests = _commands()
    assert demo.endswith("keyguard demo")
    assert tests.endswith("python -m pytest -q")


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1] in ci.splitlines()
