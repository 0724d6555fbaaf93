"""The project speaks of the project alone: no word about how the work was organised (stops,
issue numbers) and no path of a machine it was built on, in the docs, the code, the tests and
the benchmarks."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Built from parts, so this file does not match itself.
FORBIDDEN = re.compile("|".join([
    r"\b(?:this|last|next|previous) " + "stop\\b",
    r"\bissue" + r" ?#?\d+\b",
    "/" + "work/", "/" + "root/", "/tmp/" + "kg", "kg-" + r"base\d",
]), re.IGNORECASE)
TEXT = (".py", ".md", ".toml", ".yml", ".yaml", ".sh", ".cfg", ".txt", ".sql", ".proto")


def _tracked() -> list[Path]:
    try:
        names = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True,
                               text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # an sdist: no git, read the tree
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()]
    return [REPO / n for n in names if n.endswith(TEXT) or n in ("LICENSE", "MANIFEST.in")]


def test_no_process_words_or_local_paths() -> None:
    found = []
    for path in _tracked():
        if not path.is_file():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)


def test_the_docs_site_is_checked_too() -> None:
    """docs/ and mkdocs.yml are read like the code: every page the site builds from."""
    scanned = set(_tracked())
    pages = [p for p in (REPO / "docs").rglob("*") if p.is_file()]
    assert pages and REPO / "mkdocs.yml" in scanned
    assert all(p in scanned for p in pages), sorted(set(pages) - scanned)


def test_the_check_finds_what_it_looks_for() -> None:
    for text in ("measured in this " + "stop", "see issue" + " 13", "cd /" + "work/main",
                 "/" + "root/.cache", "the kg-" + "base14 tree"):
        assert FORBIDDEN.search(text), text
    assert not FORBIDDEN.search("stop the producers; the issue is a tombstone")
