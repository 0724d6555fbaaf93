"""The `keyguard` console script: guard's commands plus those sparkio contributes (demo,
migrate).

guard/ depends on nothing above it, so the script is assembled here, above both: `main` adds
sparkio's commands to `keyguard.guard.cli.app` and runs it, and `keyguard --help` lists them without
reading any package metadata. They are also in pyproject.toml's `keyguard.commands`
entry-point group, which `python -m keyguard.guard.cli` looks up when a name is not registered. This
module imports neither Spark nor the embedded broker; a command imports them only when it runs.
"""

from __future__ import annotations

import gc

# Importing this module is the script's start-up (typer, guard's CLI): the collector's youngest
# generation, collected every 700 new containers by default, would run ~30 times during it
# (~5 ms of a check). Every 10,000 keeps that to a few, and what cycles hold stays bounded.
gc.set_threshold(10_000, *gc.get_threshold()[1:])

import importlib  # noqa: E402
from typing import Any  # noqa: E402

from keyguard.guard import cli as guard_cli  # noqa: E402

#: sparkio's commands, as `keyguard <name>`: "module:function", imported when the command is
#: invoked or listed (`keyguard.guard.cli.add_command`).
COMMANDS = {"demo": "keyguard.sparkio.cli_commands:demo",
            "migrate": "keyguard.sparkio.cli_commands:migrate"}

#: What this module offered before the commands moved to `keyguard.sparkio.cli_commands` (the
#: `keyguard.commands` entry points name `keyguard.sparkio.cli:demo`): looked up there on first use.
_MOVED = ("demo", "migrate", "migration_options", "ddl_declarations", "DdlDeclarations",
          "DEFAULT_VALUE_FORMAT")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module("keyguard.sparkio.cli_commands"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The `keyguard` console script."""
    for name, command in COMMANDS.items():
        guard_cli.add_command(name, command)
    guard_cli.main()


if __name__ == "__main__":
    main()
