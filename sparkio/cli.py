"""The `keyguard` console script: guard's commands plus those sparkio contributes.

guard/ depends on nothing above it, so the script is assembled here, above both: `main` adds
sparkio's commands to `guard.cli.app` and runs it, and `keyguard --help` lists them without
reading any package metadata. They are also in pyproject.toml's `keyguard.commands`
entry-point group, which `python -m guard.cli` looks up when a name is not registered. This
module imports neither Spark nor the embedded broker; a command imports them only when it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from guard import cli as guard_cli
from guard.cli.common import handles_errors


@handles_errors
def demo(
    broker: Annotated[str, typer.Option("--broker", help="Embedded broker: tansu or noida.")]
    = "tansu",
    partitions: Annotated[int, typer.Option("--partitions")] = 6,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary registry.")] = False,
) -> None:
    """Write a table with Spark, read it back, and watch the guard block a breaking key change."""
    from sparkio.demo import run  # lazy: the CLI starts without Spark and the broker

    raise typer.Exit(run(broker=broker, partitions=partitions, keep=keep))


#: sparkio's commands, as `keyguard <name>`.
COMMANDS = {"demo": demo}


def main() -> None:
    """The `keyguard` console script."""
    for name, command in COMMANDS.items():
        guard_cli.app.command(name, epilog=guard_cli.EXIT_CODES_HELP)(command)
    guard_cli.main()


if __name__ == "__main__":
    main()
