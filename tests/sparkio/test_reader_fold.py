"""keyguard.sparkio.reader.fold_table: the column-wise table of a partition is the record-by-record
fold's (`table(decode_events(...))`), whatever the stream: updates, tombstones, null keys,
one key written with two byte encodings (a phantom), values a format skips or rejects."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.errors import DecodeError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.offsets import Record, RecordColumns
from keyguard.sparkio.reader import connector_options, decode_events, fold_table, table

COLS = "region STRING, id BIGINT, name STRING, qty INT"
BASE = {"topic": "t", "primary-key": "region,id", "properties.bootstrap.servers": "127.0.0.1:1"}
PLANS = {
    "json": {**BASE, "key.format": "json", "value.format": "json"},
    "json-ignore-errors": {**BASE, "key.format": "json", "value.format": "json",
                           "value.json.ignore-parse-errors": "true"},
    "avro": {**BASE, "key.format": "avro", "value.format": "avro"},
    "csv-key": {**BASE, "key.format": "csv", "value.format": "avro",
                "value.fields-include": "EXCEPT_KEY"},
}
_plans: dict[str, Any] = {}


def _plan(name: str) -> Any:
    if name not in _plans:
        _plans[name] = resolve_plan(parse_columns(COLS), PLANS[name], extra=connector_options())
    return _plans[name]


#: One change: (key index, value: name, None for a tombstone, or "!bad" bytes), phantom, no key.
_CHANGE = st.tuples(st.integers(0, 6), st.one_of(st.none(), st.sampled_from(["a", "b", "!bad"])),
                    st.booleans(), st.integers(0, 30))


def _encode(plan: Any, changes: list[tuple[int, str | None, bool, int]], bad: bool,
            ) -> list[Record]:
    out = []
    for offset, (k, name, phantom, roll) in enumerate(changes):
        row = {"region": ("eu", "us")[k % 2], "id": k, "name": name, "qty": roll}
        key = plan.key_codec.encode(plan.layout.key_row(row))
        if phantom and key.startswith(b"{"):  # the same JSON key, other bytes
            key = key[:-1] + b" }"
        if roll == 0:
            key = None  # dropped, as Flink's source drops it
        if name is None:
            value = None
        elif name == "!bad" and bad:
            value = b"\xff not a record"
        else:
            value = plan.value_codec.encode(plan.layout.value_row(
                {**row, "name": "bad" if name == "!bad" else name}))
        out.append(Record(0, offset, 1000 + offset, key, value))
    return out


def _row_by_row(plan: Any, records: list[Record]) -> Any:
    try:
        return [row for _, row in table(decode_events(plan, records)).values()
                if row is not None]
    except DecodeError as exc:
        return ("error", str(exc))


def _column_wise(plan: Any, records: list[Record]) -> Any:
    cols = RecordColumns(0, [r.offset for r in records], [r.timestamp for r in records],
                         [r.key for r in records], [r.value for r in records])
    half = len(records) // 2  # two batches, as a read delivers them
    batches = [RecordColumns(0, *(getattr(cols, f)[:half] for f in
                                  ("offsets", "timestamps", "keys", "values"))),
               RecordColumns(0, *(getattr(cols, f)[half:] for f in
                                  ("offsets", "timestamps", "keys", "values")))]
    try:
        folded = fold_table(plan, 0, batches)
    except DecodeError as exc:
        return ("error", str(exc))
    if folded is None:
        return None
    names = list(folded)
    values = [c if isinstance(c, list) else c.to_pylist() for c in folded.values()]
    return [dict(zip(names, vals, strict=True)) for vals in zip(*values, strict=True)]


@pytest.mark.parametrize("name", list(PLANS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(_CHANGE, max_size=25))
def test_the_column_wise_fold_is_the_row_by_row_fold(name: str, changes: Any) -> None:
    plan = _plan(name)
    clean = _encode(plan, changes, bad=False)
    assert _column_wise(plan, clean) == _row_by_row(plan, clean)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(_CHANGE, max_size=25))
def test_skipped_values_hand_the_partition_back_to_the_row_by_row_fold(changes: Any) -> None:
    plan = _plan("json-ignore-errors")
    records = _encode(plan, changes, bad=True)
    got = _column_wise(plan, records)
    live_bad = _live_bad(plan, records)
    if live_bad:
        assert got is None  # an earlier record of that key may count: the reader refolds
    else:
        assert got == _row_by_row(plan, records)


def _live_bad(plan: Any, records: list[Record]) -> bool:
    """Whether a bad value is the last record of its decoded key (what the reader keeps): a
    bad value a later record of the same key replaces, under any key bytes, never counts."""
    last: dict[Any, Record] = {}
    for r in records:
        if r.key is not None:
            last[tuple(sorted(plan.key_codec.decode(r.key).items()))] = r
    return any(r.value is not None and r.value.startswith(b"\xff") for r in last.values())


def test_a_bad_survivor_fails_naming_its_offset() -> None:
    plan = _plan("json")
    records = _encode(plan, [(1, "a", False, 5), (2, "!bad", False, 5), (3, "a", False, 5)],
                      bad=True)
    kind, message = _column_wise(plan, records)
    assert kind == "error"
    assert message.startswith("topic 't' partition 0 offset 1: ") and "not a JSON" in message


def test_a_phantom_key_keeps_only_its_last_record() -> None:
    plan = _plan("json")
    records = _encode(plan, [(1, "a", False, 5), (1, "b", True, 6)], bad=False)
    assert records[0].key != records[1].key
    assert _column_wise(plan, records) == [{"region": "us", "id": 1, "name": "b", "qty": 6}]
    gone = _encode(plan, [(1, "a", False, 5), (1, None, True, 6)], bad=False)
    assert _column_wise(plan, gone) == []
