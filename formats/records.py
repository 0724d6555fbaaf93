"""`@record`: `@dataclass(frozen=True)`, cheaper to declare.

A frozen dataclass gets six methods when its module is imported, each compiled from generated
source (an `exec` per method, ~0.1 ms each on CPython 3.11): about 20 ms for the records a
`keyguard check` imports, paid by every run of the CLI. `@record` has `dataclass` generate only
the three whose code depends on the class (`__init__`, and the frozen `__setattr__` and
`__delattr__`) and gives every record the same `__eq__`, `__hash__` and `__repr__`, written
once here. They behave as the generated ones: equal when of the same class with equal compared
fields, in declaration order; hashed by the fields `dataclass` hashes; `Name(field=value, ...)`
with the fields shown, `...` for a recursive reference. A method the class writes itself is
kept, as `@dataclass` keeps it. The class is a dataclass all the same (`fields`, `replace`,
`asdict`, pickling), and type checkers read it as a frozen one.

Use it for records built a few times per command (plans, options, reports); a class built per
row or per key in a hot loop may keep `@dataclass(frozen=True)`, whose equality and hashing are
a little faster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # typing_extensions costs ~3 ms to import; this only informs type checkers

    def dataclass_transform(**_: Any) -> Callable[[T], T]:
        return lambda decorator: decorator


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of `names` as a tuple (always a tuple, as the generated methods build)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)  # type: ignore[return-value]


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        compared = self.__class__.__record_compared__
        return compared(self) == compared(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__record_hashed__(self))


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__.__record_shown__)
    return f"{self.__class__.__qualname__}({shown})"


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """Declare `cls` as `@dataclass(frozen=True)` would (see the module's docstring)."""
    own = vars(cls)
    writes_eq = "__eq__" in own
    class_hash = own.get("__hash__", MISSING)
    # as dataclass decides: a class that writes __eq__ alone has __hash__ = None implicitly
    writes_hash = not (class_hash is MISSING or (class_hash is None and writes_eq))
    dataclass(frozen=True, eq=False, repr=False)(cls)  # in place
    declared = fields(cls)  # type: ignore[arg-type]
    kind: Any = cls
    kind.__record_compared__ = _values(tuple(f.name for f in declared if f.compare))
    kind.__record_hashed__ = _values(tuple(
        f.name for f in declared if (f.compare if f.hash is None else f.hash)))
    kind.__record_shown__ = tuple(f.name for f in declared if f.repr)
    if not writes_eq:
        kind.__eq__ = _eq
    if not writes_hash:
        kind.__hash__ = _hash
    if "__repr__" not in own:
        kind.__repr__ = _repr
    return cls
