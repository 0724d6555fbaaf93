"""Every command's help says what it contacts (a registry, a broker, or nothing) in one
sentence that starts with "Contacts", and a command that contacts nothing says so."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

#: Each command, and whether its help must name the registry and the broker.
COMMANDS = {
    "encode": ("registry",), "decode": ("registry",), "formats": (),
    "check": ("registry", "broker"), "diff": (), "schema": (), "rules": (),
    "audit": ("registry", "broker"),
    "migrate": ("registry", "broker"), "demo": ("broker", "registry"), "broker": ("broker",),
}


def _keyguard(*args: str) -> str:
    """The installed script's output (`python -m keyguard`), on a wide terminal."""
    done = subprocess.run([sys.executable, "-m", "keyguard", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _help(name: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", _keyguard(name, "--help")).split())


def test_every_command_is_listed_here() -> None:
    listed = _keyguard("--help")
    shown = set(re.findall(r"│ (\w+)\s{2,}", listed))
    assert shown == set(COMMANDS), "give each new command its Contacts sentence and a row here"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_says_what_the_command_contacts(name: str) -> None:
    text = _help(name)
    sentence = re.search(r"Contacts[^.]*\.", text)
    assert sentence is not None, f"keyguard {name} --help says nothing of what it contacts"
    for thing in COMMANDS[name]:
        assert thing in text[sentence.start():], (name, thing)
    if not COMMANDS[name]:
        assert sentence.group(0).startswith("Contacts nothing"), sentence.group(0)
