"""Progress of a long step on stderr: `keyguard audit` and `keyguard migrate` reading and
writing records.

On a terminal one line is redrawn in place, at most ten times a second; anywhere else (a CI
log, a pipe) a plain line is printed every `PLAIN_EVERY_S` seconds of a step, and when a step
that printed one ends: a long run is never silent, a short one adds nothing to the log, and a
log is never flooded. stdout stays the report's.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

#: Seconds between two plain lines (not a terminal).
PLAIN_EVERY_S = 10.0


class Progress:
    """`<verb>: <done>/<total> <what> (<pct>), <rate>/s, <left>s left`, on `stream`."""

    def __init__(self, verb: str, *, stream: TextIO | None = None, tty: bool | None = None,
                 every_s: float = PLAIN_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.verb = verb
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _is_terminal(self.stream) if tty is None else tty
        self.every_s = 0.1 if self.tty else every_s
        self.clock = clock
        # A terminal shows the first call at once; a log waits a whole period first.
        self._shown = -1e9 if self.tty else clock()
        self._printed = False
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int, elapsed: float, what: str = "records") -> None:
        finished = done >= total
        with self._lock:
            now = self.clock()
            due = now - self._shown >= self.every_s
            if not due and not (finished and (self.tty or self._printed)):
                return
            self._shown = now
            self._printed = not finished
            rate = done / elapsed if elapsed > 0 else 0.0
            left = (total - done) / rate if rate > 0 else 0.0
            pct = f" ({100 * done // total}%)" if total else ""
            line = (f"keyguard {self.verb}: {done:,}/{total:,} {what}{pct}, "
                    f"{rate:,.0f}/s, {left:,.0f}s left")
            if self.tty:
                self.stream.write(f"\r{line}   " + ("\n" if finished else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def note(self, text: str) -> None:
        """A line of its own (a phase starts), on a fresh line."""
        with self._lock:
            self.stream.write(f"keyguard {self.verb}: {text}\n")
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("CI", "").lower() not in ("true", "1")
    except (AttributeError, ValueError):
        return False


__all__ = ["PLAIN_EVERY_S", "Progress"]
