"""`python -m guard.cli` runs the keyguard command."""

from guard.cli import app

app(prog_name="keyguard")
