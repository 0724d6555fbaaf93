"""The header `keyguard migrate` puts on every record it writes, read by the migration (its
model of the table) and by the audit (a retirement is not a delete).

`copy {"ts": T, "seen": [[topic, partition, offset], ...]}` on a rewrite: the logical time of
the record it copies and, per (topic, partition), the last offset of its row the migration had
read; on a tombstone, the same for a row whose latest record is a delete (the delete carried
over: it is a delete of the row). `retire N` on a tombstone that retires an old encoding: its
slot's records up to offset N moved under the new key. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

#: A record's place: (topic, partition, offset).
Position = tuple[str, int, int]

#: The header a migration puts on every record it writes: `copy {json}` on a rewrite,
#: `retire <offset>` on a retirement tombstone.
MARKER = "keyguard.migrate"


@dataclass(frozen=True)
class Copy:
    """What a rewrite carries: the logical time of the record it copies, and the last offset
    of its row it saw on each (topic, partition): every record of the row up to there was
    known when the rewrite was planned, so the rewrite supersedes it."""

    timestamp: int
    seen: tuple[Position, ...]

    def header(self) -> tuple[str, bytes]:
        doc = {"ts": self.timestamp, "seen": [list(p) for p in self.seen]}
        return MARKER, b"copy " + json.dumps(doc, separators=(",", ":")).encode()


def retire_header(through: int) -> tuple[str, bytes]:
    """The header of a retirement tombstone: the slot's records up to `through` moved."""
    return MARKER, b"retire %d" % through


def read_marker(headers: Iterable[tuple[str, bytes | None]] | None) -> Copy | int | None:
    """A record's migration header: a Copy, a retirement's offset, or None (a producer's own
    record, or a header that does not parse, which is read as no marker at all)."""
    for name, raw in headers or ():
        if name != MARKER or raw is None:
            continue
        try:
            kind, _, body = bytes(raw).partition(b" ")
            if kind == b"retire":
                return int(body)
            if kind == b"copy":
                doc = json.loads(body)
                seen = tuple((str(t), int(p), int(o)) for t, p, o in doc["seen"])
                return Copy(int(doc["ts"]), seen)
        except (ValueError, TypeError, KeyError):
            return None
    return None
