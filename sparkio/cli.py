"""The `keyguard` console script: guard's commands plus those sparkio contributes (demo,
broker, migrate).

guard/ depends on nothing above it, so the script is assembled here, above both: `main` adds
sparkio's commands to `keyguard.guard.cli.app` and runs it, and `keyguard --help` lists them without
reading any package metadata. They are also in pyproject.toml's `keyguard.commands`
entry-point group, which `python -m keyguard.guard.cli` looks up when a name is not registered. This
module imports neither Spark nor the embedded broker; a command imports them only when it runs.
"""

from __future__ import annotations

from keyguard.guard import cli as guard_cli

#: sparkio's commands, as `keyguard <name>`: "module:function", imported when the command is
#: invoked or listed (`keyguard.guard.cli.add_command`).
COMMANDS = {"demo": "keyguard.sparkio.cli_commands:demo",
            "broker": "keyguard.sparkio.cli_commands:broker",
            "migrate": "keyguard.sparkio.cli_commands:migrate"}


def main() -> None:
    """The `keyguard` console script."""
    for name, command in COMMANDS.items():
        guard_cli.add_command(name, command)
    guard_cli.main()


if __name__ == "__main__":
    main()
