"""`python -m guard.cli` runs the keyguard command."""

from guard.cli import main

main()
