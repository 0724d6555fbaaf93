"""The README's first command: `keyguard demo` runs end to end on embedded defaults."""

import shutil
import subprocess
import sys

import pytest


@pytest.mark.spark
@pytest.mark.slow
def test_demo_writes_reads_blocks_and_passes(tmp_path):
    if shutil.which("java") is None:
        pytest.fail("keyguard demo needs Java 17 (the README's command installs it)")
    done = subprocess.run([sys.executable, "-m", "keyguard.guard.cli", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "4 upserts, 1 tombstones" in out
    # The delete removed APAC from the table; EMEA carries its update.
    table = out.split("== 3.")[1].split("changelog:")[0]
    assert "user_region=EMEA  pv=131  uv=44" in table and "APAC" not in table
    assert "BLOCKED by the guard" in out and "KG501" in out
    assert "the guard passed" in out and "avg_session_ms=812.5" in out
    assert "stopped the tansu broker" in out
