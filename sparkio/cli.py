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

#: What `keyguard --help` lists for them (`keyguard.guard.catalog.SUMMARIES`): their docstrings'
#: first paragraphs, so that the listing does not import their module.
SUMMARIES = {
    "demo": "Write a table with Spark, read it back, and watch the guard block a breaking key "
            "change.",
    "broker": "Run an embedded broker on loopback until Ctrl-C, to try audit and migrate locally.",
    "migrate": "Re-key a compacted topic without orphaning records (the fix for a key change).",
}


def main() -> None:
    """The `keyguard` console script."""
    for name, command in COMMANDS.items():
        guard_cli.add_command(name, command, SUMMARIES[name])
    guard_cli.main()


if __name__ == "__main__":
    main()
