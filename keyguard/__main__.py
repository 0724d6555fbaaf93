"""`python -m keyguard` runs the `keyguard` command."""

from keyguard.sparkio.cli import main

main()
