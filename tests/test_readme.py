"""The README and the docs tell the truth: their generated parts match the declarations, the
README's test command is the one CI runs, and the docs site builds."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from keyguard.sparkio.docs import PAGES, render

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: The README's size limit: the problem, the two commands, a tour and links; the rest is in docs/.
README_LIMIT = 20 * 1024


def docs_pages() -> list[Path]:
    return sorted((REPO / "docs").rglob("*.md"))


def docs_text() -> str:
    """The README and every docs page, for a claim that may sit anywhere in the docs."""
    return "\n".join([README, *(p.read_text(encoding="utf-8") for p in docs_pages())])


@pytest.mark.parametrize("page", PAGES)
def test_generated_parts_match_the_declarations(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    assert "<!-- " in text, f"{page} holds no generated block"
    assert render(text) == text, "run: python -m keyguard.sparkio.docs"


def test_every_generated_block_sits_in_a_page_the_generator_owns() -> None:
    owned = {REPO / p for p in PAGES}
    for path in [REPO / "README.md", *docs_pages()]:
        if path not in owned:
            assert "<!-- options:" not in path.read_text(encoding="utf-8"), path


def test_the_readme_stays_short() -> None:
    assert len(README.encode("utf-8")) < README_LIMIT


def test_the_readme_links_only_to_pages_that_exist() -> None:
    for target in (part.split(")")[0].split("#")[0] for part in README.split("](")[1:]):
        if target and "://" not in target:
            assert (REPO / target).is_file(), target


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in docs_pages():
        assert f" {page.relative_to(REPO / 'docs').as_posix()}\n" in nav, page


def test_docs_keep_the_facts_tests_and_users_rely_on() -> None:
    text = docs_text()
    for fact in ("default to `avro-confluent`", "keyguard check --against git:main",
                 "1300494881", "murmur2", "`--flink-ddl-connections`"):
        assert fact in text, fact


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs comes with the test extra")
    pytest.importorskip("material", reason="mkdocs-material comes with the test extra")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert "KG501" in (tmp_path / "site" / "reference" / "rules" / "index.html").read_text()
    assert "Unreleased" in (tmp_path / "site" / "changelog" / "index.html").read_text()
    shutil.rmtree(tmp_path / "site")


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
