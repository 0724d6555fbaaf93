"""Witness search pieces: the battery, carrying old keys to the new type, field pairing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from keyguard.formats.sqltypes import parse_columns, parse_type
from keyguard.guard.keys.side import KeySide, pair_fields, partitioner_family, reordered
from keyguard.guard.keys.witness import (
    CarryError,
    base_key,
    battery,
    candidates,
    carry,
    carry_row,
    place,
)


def test_battery_covers_the_edge_cases() -> None:
    s = battery(parse_type("STRING NOT NULL"))
    assert {"", "a,b", 'q"t', "ü€日本😀"} <= set(s) and None not in s
    assert battery(parse_type("STRING"))[-1] is None
    d = battery(parse_type("DECIMAL(5, 2) NOT NULL"))
    assert Decimal("999.99") in d and Decimal("-999.99") in d and Decimal("0.01") in d
    assert all(-d_ <= Decimal("999.99") for d_ in d)
    ts = battery(parse_type("TIMESTAMP(6) NOT NULL"))
    assert any(t.microsecond % 1000 for t in ts)  # sub-millisecond
    assert all(t.microsecond % 1000 == 0 for t in battery(parse_type("TIMESTAMP(3) NOT NULL")))
    i = battery(parse_type("INT NOT NULL"))
    assert 2**31 - 1 in i and -(2**31) in i and 2**31 not in i


def test_candidates_vary_one_field_at_a_time_preferred_first() -> None:
    rt = parse_columns("a INT NOT NULL, b STRING NOT NULL")
    base = base_key(rt)
    assert base["a"] != 0 and base["b"] != ""
    keys = list(candidates(rt, prefer="b"))
    assert keys[0] == base
    assert keys[1]["a"] == base["a"] and keys[1]["b"] != base["b"]
    assert all(k["a"] == base["a"] or k["b"] == base["b"] for k in keys)


def test_carry_follows_flink_cast() -> None:
    f, d = parse_type("FLOAT NOT NULL"), parse_type("DOUBLE NOT NULL")
    assert carry(0.10000000149011612, f, d) == 0.10000000149011612
    assert carry(0.1, d, f) == pytest.approx(0.1, rel=1e-7) and carry(0.1, d, f) != 0.1
    assert carry(5, parse_type("INT"), d) == 5.0
    assert carry(Decimal("1.25"), parse_type("DECIMAL(5, 2)"), parse_type("DECIMAL(5, 1)")) \
        == Decimal("1.3")
    with pytest.raises(CarryError):
        carry(2**31, parse_type("BIGINT"), parse_type("INT"))
    with pytest.raises(CarryError):
        carry(None, parse_type("INT"), parse_type("INT NOT NULL"))
    with pytest.raises(CarryError):
        carry("abc", parse_type("STRING"), parse_type("INT"))
    ts = dt.datetime(2024, 1, 1, 0, 0, 0, 123456)
    assert carry(ts, parse_type("TIMESTAMP(6)"), parse_type("TIMESTAMP(3)")).microsecond == 123000


def test_carry_row_pairs_by_name_then_position() -> None:
    old = parse_columns("id BIGINT NOT NULL, region STRING NOT NULL")
    new = parse_columns("uid BIGINT NOT NULL, region STRING NOT NULL, extra STRING")
    assert carry_row({"id": 1, "region": "EU"}, old, new) == \
        {"uid": 1, "region": "EU", "extra": None}
    # A moved field is not a rename: `id` is removed and `uid` added (a typical value).
    moved = parse_columns("region STRING NOT NULL, uid BIGINT NOT NULL")
    assert carry_row({"id": 1, "region": "EU"}, old, moved) == {"region": "EU", "uid": 42}


def test_pairing_and_reorder() -> None:
    old = parse_columns("a INT, b INT, c INT").fields
    renamed = pair_fields(old, parse_columns("a INT, x INT, c INT").fields)
    assert [(p.old and p.old.name, p.new and p.new.name) for p in renamed] == \
        [("a", "a"), ("b", "x"), ("c", "c")]
    assert not reordered(renamed)
    assert reordered(pair_fields(old, parse_columns("c INT, a INT, b INT").fields))
    dropped = pair_fields(old, parse_columns("a INT, c INT").fields)
    assert not reordered(dropped) and dropped[-1].new is None and dropped[-1].old.name == "b"


def test_partitioners() -> None:
    assert partitioner_family("murmur2_random") == partitioner_family("default") == "murmur2"
    assert partitioner_family("consistent_random") == "crc32"
    assert place("round-robin", b"k", 6) is None
    assert place("murmur2", b"k", 6) == place("murmur2", b"k", 6)
    with pytest.raises(Exception, match="unknown partitioner"):
        KeySide("json", parse_columns("a INT NOT NULL"), partitioner="bogus")


def test_battery_of_nested_rows_grows_linearly_with_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each nested row's battery is computed once (it was twice per level: 2^depth calls)."""
    import keyguard.guard.keys.witness as witness

    calls = {"n": 0}
    original = witness.battery

    def counting(t: object) -> list[object]:
        calls["n"] += 1
        return original(t)  # type: ignore[arg-type]

    monkeypatch.setattr(witness, "battery", counting)
    counts = {}
    for depth in (5, 10):
        t = "INT"
        for _ in range(depth):
            t = f"ROW<p {t}>"
        calls["n"] = 0
        witness.battery(parse_type(t))
        counts[depth] = calls["n"]
    assert counts == {5: 6, 10: 11}
