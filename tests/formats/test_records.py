"""`@record` behaves as `@dataclass(frozen=True)`: each shape declared both ways, compared."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from formats.records import record


def _shapes(decorate: Any) -> dict[str, type]:
    @decorate
    class Plain:
        a: int
        b: str = "x"

    @decorate
    class Factory:
        a: int
        items: tuple[int, ...] = ()
        extra: dict[str, int] = field(default_factory=dict)

    @decorate
    class Flags:
        a: int
        hidden: str = field(default="h", repr=False)
        ignored: int = field(default=0, compare=False)
        unhashed: int = field(default=1, hash=False)

    @decorate
    class Empty:
        pass

    @decorate
    class One:
        a: float

    @decorate
    class Child(Plain):
        c: int = 3

    @decorate
    class OwnEq:
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and abs(self.a) == abs(other.a)

    @decorate
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @decorate
    class OwnRepr:
        a: int

        def __repr__(self) -> str:
            return "own"

    @decorate
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    @decorate
    class Node:
        name: str
        children: list[Any] = field(default_factory=list)

    return {c.__name__: c for c in (Plain, Factory, Flags, Empty, One, Child, OwnEq, OwnHash,
                                    OwnRepr, Checked, Node)}


RECORD, DATACLASS = _shapes(record), _shapes(dataclass(frozen=True))

ARGS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Plain": [((1,), {}), ((1, "y"), {}), ((), {"a": 2, "b": "z"})],
    "Factory": [((1,), {}), ((1, (2, 3)), {"extra": {"k": 1}})],
    "Flags": [((1,), {}), ((1, "other"), {"ignored": 9, "unhashed": 5})],
    "Empty": [((), {})],
    "One": [((1.5,), {}), ((float("nan"),), {})],
    "Child": [((1,), {}), ((1, "y", 4), {})],
    "OwnEq": [((1,), {}), ((-1,), {})],
    "OwnHash": [((1,), {}), ((2,), {})],
    "OwnRepr": [((1,), {})],
    "Checked": [((1,), {})],
    "Node": [(("n",), {})],
}


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_record_behaves_as_a_frozen_dataclass(name):
    for args, kwargs in ARGS[name]:
        ours, theirs = RECORD[name](*args, **kwargs), DATACLASS[name](*args, **kwargs)
        assert repr(ours) == repr(theirs)
        assert dataclasses.is_dataclass(ours)
        assert [f.name for f in dataclasses.fields(ours)] == [
            f.name for f in dataclasses.fields(theirs)]
        assert type(ours).__match_args__ == type(theirs).__match_args__
        assert _hashable(ours) == _hashable(theirs)
        if _hashable(theirs):
            assert hash(ours) == hash(theirs)
        twin = RECORD[name](*args, **kwargs)
        assert (ours == twin) == (theirs == DATACLASS[name](*args, **kwargs))
        assert (ours != twin) == (theirs != DATACLASS[name](*args, **kwargs))
        assert ours.__eq__(theirs) is NotImplemented or name == "OwnEq"
        assert ours == ours or name == "One"  # nan: as the dataclass (tuples compare by identity)
        assert (ours == ours) == (theirs == theirs)
        assert copy.deepcopy(ours) == ours or name == "One"  # pickling takes the same path
        names = [f.name for f in dataclasses.fields(ours)]
        if names:
            with pytest.raises(FrozenInstanceError):
                setattr(ours, names[0], None)
            with pytest.raises(FrozenInstanceError):
                delattr(ours, names[0])
            changed = dataclasses.replace(ours, **{names[0]: getattr(ours, names[0])})
            assert type(changed) is type(ours)


def test_a_record_compares_pairs_as_the_dataclass_does():
    pairs = [((1,), {}), ((1,), {"ignored": 2}), ((2,), {}), ((1, "other"), {}),
             ((1,), {"unhashed": 3})]
    for a_args, a_kw in pairs:
        for b_args, b_kw in pairs:
            ours = RECORD["Flags"](*a_args, **a_kw) == RECORD["Flags"](*b_args, **b_kw)
            theirs = DATACLASS["Flags"](*a_args, **a_kw) == DATACLASS["Flags"](*b_args, **b_kw)
            assert ours == theirs
    assert RECORD["Child"](1) != RECORD["Plain"](1)  # another class is never equal
    assert RECORD["OwnEq"](1) == RECORD["OwnEq"](-1)  # the class's own __eq__ is kept
    assert hash(RECORD["OwnHash"](1)) == 7
    assert repr(RECORD["OwnRepr"](1)) == "own"


def test_a_record_checks_and_fails_as_the_dataclass_does():
    with pytest.raises(ValueError, match="negative"):
        RECORD["Checked"](-1)
    with pytest.raises(TypeError):
        RECORD["Plain"]()  # a required field missing
    with pytest.raises(TypeError):
        RECORD["Plain"](1, "x", 3)  # too many


def test_a_recursive_record_repr_says_dots():
    ours, theirs = RECORD["Node"]("n"), DATACLASS["Node"]("n")
    ours.children.append(ours)
    theirs.children.append(theirs)
    assert repr(ours) == repr(theirs) == "_shapes.<locals>.Node(name='n', children=[...])"
