"""`Value`: the base of keyguard's immutable records and small value classes.

A value class lists its fields in `FIELDS`, in the order its constructor takes them (by those
names), declares each as a `Final` attribute and sets it in its `__init__` (type checkers
reject any later assignment). `Value` gives it equality (same class, equal fields), a hash of
the fields (a value with a mapping field is unhashable, as a frozen dataclass holding one is),
a repr, and `replace`.

Plain classes, rather than frozen dataclasses or NamedTuples: in the Python versions keyguard
supports, both generate code when their module is imported (a frozen dataclass compiles six
methods, about 0.8 ms a class; a NamedTuple compiles its constructor and each field's
annotation, about 0.2 ms), which every CLI start pays for, dozens of times. A `keyguard check`
runs about 3% fewer instructions (valgrind) with its 36 records as value classes than as
NamedTuples.
Its users: the guard's Report, Finding, Rule and every record a check builds, the frames,
`FormatFactory`, `KeySide`, and the logical types (`keyguard.formats.types`, which also refuse
assignment at run time).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

V = TypeVar("V", bound="Value")


class Value:
    __slots__ = ()
    #: The fields, in the order the constructor takes them.
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Value)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"{self.__class__.__name__}({shown})"

    def replace(self: V, **changes: Any) -> V:
        """This value with the fields in `changes` changed (made anew: checked as any is)."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{self.__class__.__name__} has no field {', '.join(sorted(unknown))}")
        return self.__class__(**{f: changes.get(f, getattr(self, f)) for f in self.FIELDS})
