"""A reader that leaves early (`keyguard rules | head -1`) is not a keyguard failure.

The child's stdout is a pipe whose read end is closed before the child writes: every write
fails with EPIPE. The command must still end with its own exit code (0 for a listing, 1 for a
breaking verdict), say nothing on stderr, and never report itself as a bug (exit 4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"


def run_with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the child's first write gets EPIPE
    try:
        return subprocess.run([sys.executable, "-m", "keyguard.guard.cli", *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write_end)


def test_a_listing_whose_reader_left_exits_0_quietly():
    done = run_with_closed_stdout("rules")
    assert done.returncode == 0, done.stderr
    assert "BrokenPipe" not in done.stderr and "keyguard failed" not in done.stderr


def test_a_verdict_survives_a_reader_that_left(tmp_path):
    added = json.loads(KEY_V1.read_text())
    added["fields"].append({"name": "tenant", "type": ["null", "string"], "default": None})
    new = tmp_path / "added.avsc"
    new.write_text(json.dumps(added))
    done = run_with_closed_stdout("diff", str(KEY_V1), str(new), "--key")
    assert done.returncode == 1, done.stderr  # breaking, as with a reader
    assert "keyguard failed" not in done.stderr
