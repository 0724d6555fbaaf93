"""The commands sparkio contributes to the `keyguard` CLI.

guard/ depends on nothing above it: these commands are registered in pyproject.toml's
`keyguard.commands` entry-point group, which `guard.cli` reads only when a command is not built in
or help is printed. This module imports neither Spark nor
the embedded broker; a command imports them only when it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

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
