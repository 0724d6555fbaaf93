"""`python -m keyguard.guard.cli` runs the keyguard command."""

from keyguard.guard.cli import main

main()
