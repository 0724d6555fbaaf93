"""`@record` behaves as `@dataclass(frozen=True)`: each shape declared both ways, compared."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from keyguard.formats.records import HOT_INSTANCES, record


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

    @decorate
    class KwOnly:
        """Keyword-only fields come after the positional ones, whatever their order."""

        a: int
        k: int = field(kw_only=True)
        b: str = "x"
        j: list[int] = field(default_factory=list, kw_only=True)

    @decorate
    class NotInit:
        """Fields outside __init__: from their factory, or the class attribute."""

        a: int
        made: list[int] = field(default_factory=list, init=False)
        fixed: int = field(default=5, init=False)

    @decorate
    class ChildChecked(Checked):
        """Inherits the parent's fields and its __post_init__."""

        b: int = 0

    return {c.__name__: c for c in (Plain, Factory, Flags, Empty, One, Child, OwnEq, OwnHash,
                                    OwnRepr, Checked, Node, KwOnly, NotInit, ChildChecked)}


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
    "KwOnly": [((1,), {"k": 2}), ((1, "y"), {"k": 2, "j": [3]})],
    "NotInit": [((1,), {})],
    "ChildChecked": [((1,), {}), ((1, 2), {})],
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


def _values_of(obj: Any) -> list[Any]:
    return [getattr(obj, f.name, None) for f in dataclasses.fields(obj)]


def test_a_record_has_the_dataclass_signature_and_values():
    shapes = _shapes(record)  # fresh classes: the first instances bind in Python
    for name, cases in ARGS.items():
        ours, theirs = shapes[name], DATACLASS[name]
        for args, kwargs in cases:
            assert _values_of(ours(*args, **kwargs)) == _values_of(theirs(*args, **kwargs))
        for _ in range(HOT_INSTANCES):  # then the compiled __init__ takes over
            ours(*cases[0][0], **cases[0][1])
        for args, kwargs in cases:
            assert _values_of(ours(*args, **kwargs)) == _values_of(theirs(*args, **kwargs))
        assert str(inspect.signature(ours)) == str(inspect.signature(theirs)), name
    assert RECORD["NotInit"](1).fixed == 5 and RECORD["NotInit"](1).made == []


@pytest.mark.parametrize("hot", [False, True])
def test_a_wrong_call_fails_as_the_dataclass_does_before_and_after_compiling(hot):
    shapes = _shapes(record)
    if hot:
        for name, cases in ARGS.items():
            for _ in range(HOT_INSTANCES):
                shapes[name](*cases[0][0], **cases[0][1])
    wrong: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("Plain", (), {}), ("Plain", (1, "x", 3), {}), ("Plain", (1,), {"a": 2}),
        ("Plain", (1,), {"c": 2}), ("KwOnly", (1, 2), {}), ("KwOnly", (1,), {}),
        ("NotInit", (1, []), {}), ("NotInit", (1,), {"fixed": 2}), ("Empty", (1,), {})]
    for name, args, kwargs in wrong:
        with pytest.raises(TypeError) as ours:
            shapes[name](*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            DATACLASS[name](*args, **kwargs)
        if "missing" in str(theirs.value) or "unexpected" in str(theirs.value) \
                or "multiple" in str(theirs.value):
            assert str(ours.value).split("()", 1)[1] == str(theirs.value).split("()", 1)[1]
    with pytest.raises(ValueError, match="negative"):
        shapes["Checked"](-1)


def test_a_record_fails_at_declaration_and_construction_as_the_dataclass_does():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]
    with pytest.raises(TypeError):
        RECORD["KwOnly"](1, 2)  # k is keyword-only
    with pytest.raises(TypeError):
        RECORD["NotInit"](1, [])  # made is not a parameter
    with pytest.raises(ValueError, match="negative"):
        RECORD["ChildChecked"](-1)


def test_a_subclass_built_first_leaves_its_parent_right():
    @record
    class Base:
        a: int

    @record
    class Sub(Base):
        b: int = 2

    assert repr(Sub(1)).endswith("<locals>.Sub(a=1, b=2)")
    assert Base(3).a == 3
    with pytest.raises(TypeError):
        Base(3, 4)
    assert pickle.loads(pickle.dumps(ARGS_RECORD_PICKLED)) == ARGS_RECORD_PICKLED


@record
class _Pickled:
    """Module level, so pickle finds it."""

    a: int
    items: tuple[int, ...] = ()


ARGS_RECORD_PICKLED = _Pickled(1, (2,))


def test_an_undocumented_record_is_documented_by_its_signature_as_the_dataclass_is():
    for name in ("Plain", "Factory", "Child", "Empty", "OwnEq"):
        assert RECORD[name].__doc__ == DATACLASS[name].__doc__, name
    assert RECORD["KwOnly"].__doc__ == DATACLASS["KwOnly"].__doc__  # its own docstring


def test_a_mutable_record_behaves_as_a_dataclass():
    def shapes(decorate: Any) -> tuple[type, type]:
        @decorate
        class Walk:
            """State that changes."""

            named: dict[str, int]
            seen: set[int] = field(default_factory=set)
            depth: int = 0

        @decorate
        class Hashed:
            """Writes its own hash."""

            a: int

            def __hash__(self) -> int:
                return self.a

        return Walk, Hashed

    (ours, ours_hashed), (theirs, theirs_hashed) = shapes(record(frozen=False)), shapes(dataclass)
    a, b = ours({"x": 1}), theirs({"x": 1})
    a.depth, b.depth = 2, 2  # assignable
    a.seen.add(1)
    b.seen.add(1)
    assert repr(a).replace(".Walk(", "") == repr(b).replace(".Walk(", "")
    assert a == ours({"x": 1}, {1}, 2) and a != ours({"x": 1})
    assert (a == ours({"x": 1}, {1}, 2)) == (b == theirs({"x": 1}, {1}, 2))
    assert not _hashable(a) and not _hashable(b)
    assert hash(ours_hashed(3)) == hash(theirs_hashed(3)) == 3
    for _ in range(HOT_INSTANCES):
        ours({})
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert dataclasses.is_dataclass(a)
    del a.depth  # no frozen __delattr__
    assert a.depth == 0  # the class attribute, as for the dataclass
