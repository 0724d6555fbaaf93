"""`@record`: `@dataclass(frozen=True)`, cheaper to declare.

A frozen dataclass gets six methods when its module is imported, each compiled from generated
source (an `exec` per method, 0.1 to 0.3 ms each on CPython 3.11): about 25 ms for the 37
records a `keyguard check` imports, paid by every run of the CLI. `@record` compiles nothing
when the class is declared: `dataclass` only collects the fields; the frozen `__setattr__` and
`__delattr__` are closures over the class (the code `dataclass` would generate, written once
here), every record shares the same `__eq__`, `__hash__` and `__repr__`, and `__init__` binds
its arguments in Python for the class's first HOT_INSTANCES instances, then is compiled from
the source `dataclass` would generate (a record a run builds a few times never pays for the
compilation, ~0.2 ms; `inspect.signature` shows the real parameters once it is): positional
and keyword-only fields, defaults, default factories, `__post_init__`. They behave as the
generated ones: equal when of the same class with equal compared fields, in declaration order;
hashed by the fields `dataclass` hashes; `Name(field=value, ...)` with the fields shown, `...`
for a recursive reference; a field without a default after one with a default fails at
declaration. A method the class writes itself is kept, as `@dataclass` keeps it. The class is
a dataclass all the same (`fields`, `replace`, `asdict`, pickling), and type checkers read it
as a frozen one.
(`InitVar` pseudo-fields are not supported: declaring one is a TypeError.)

Use it for records built a few times per command (plans, options, reports); a class built per
row or per key in a hot loop may keep `@dataclass(frozen=True)`, whose equality and hashing are
a little faster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, TypeVar, overload

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


def _frozen(cls: Any, names: tuple[str, ...]) -> None:
    """The frozen `__setattr__` and `__delattr__` that `dataclass(frozen=True)` generates."""

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        if method.__name__ in vars(cls):  # as dataclass(frozen=True) refuses it
            raise TypeError(f"Cannot overwrite attribute {method.__name__} in class "
                            f"{cls.__name__}")
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)


class _Factory:
    """The default of a parameter whose field has a default factory (shown as `<factory>`)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _init_source(cls: Any) -> tuple[str, dict[str, Any]]:
    """The source of the `__init__` that `dataclass` generates for `cls` (frozen or not), and
    the names it refers to."""
    names: dict[str, Any] = {"__record_set__": object.__setattr__, "__record_factory__": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields(cls):
        default = f"__record_default_{f.name}__"
        if f.default_factory is not MISSING:
            names[default] = f.default_factory
            if f.init:
                param = f"{f.name}=__record_factory__"
                value = f"{default}() if {f.name} is __record_factory__ else {f.name}"
            else:
                param, value = "", f"{default}()"
        elif f.init:
            if f.default is not MISSING:
                names[default] = f.default
                param = f"{f.name}={default}"
            else:
                param = f.name
            value = f.name
        else:  # init=False, no factory: the class attribute (if any) is the value
            continue
        if param:
            (keyword if f.kw_only is True else positional).append(param)
        body.append(f"    __record_set__(self, {f.name!r}, {value})" if cls.__record_frozen__
                    else f"    self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ["self", *positional, *(["*", *keyword] if keyword else [])]
    return (f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n",
            names)


def _compiled_init(cls: Any) -> Callable[..., None]:
    source, names = _init_source(cls)
    namespace: dict[str, Any] = {}
    exec(source, names, namespace)  # the field names only, as dataclass generates it
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields(cls) if f.init}, "return": None}
    return init


#: Instances a record builds by binding its arguments in Python before its `__init__` is
#: compiled (~0.2 ms): a record a run builds a few times never pays for compiling it, one
#: built in a loop soon has the fast one.
HOT_INSTANCES = 50


def _plural(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) < 3:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _lazy_init(cls: Any) -> Callable[..., None]:
    """An `__init__` that binds its arguments as the compiled one would, counting the
    instances; at HOT_INSTANCES it compiles the real one and becomes it."""
    spec: list[Any] = [None]  # (positional, keyword-only, required, steps), built on first use
    built = [0]
    where = f"{cls.__qualname__}.__init__()"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        if built[0] >= HOT_INSTANCES:
            init = cls.__init__ = _compiled_init(cls)
            init(self, *args, **kwargs)
            return
        if spec[0] is None:  # one assignment: threads building it twice build the same
            spec[0] = _init_spec(cls)
        positional, keyword, required, steps = spec[0]
        if len(args) > len(positional):
            raise TypeError(f"{where} takes {len(positional) + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        bound = dict(zip(positional, args, strict=False))  # the rest by keyword or default
        for name, value in kwargs.items():
            if name in bound:
                raise TypeError(f"{where} got multiple values for argument {name!r}")
            if name not in keyword and name not in positional:
                raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
            bound[name] = value
        for kind, names in required:
            missing = [n for n in names if n not in bound]
            if missing:
                raise TypeError(f"{where} missing {len(missing)} required {kind} "
                                f"argument{'s' if len(missing) > 1 else ''}: {_plural(missing)}")
        assign = object.__setattr__ if cls.__record_frozen__ else setattr
        for name, default, factory in steps:
            if name in bound:
                value = bound[name]
            elif factory is not MISSING:
                value = factory()
            else:
                value = default
            assign(self, name, value)
        if post_init:
            self.__post_init__()

    post_init = hasattr(cls, "__post_init__")
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _init_spec(cls: Any) -> tuple[tuple[str, ...], frozenset[str], list[Any], list[Any]]:
    """What `_init_source` compiles, as data: the positional and keyword-only parameters, the
    required ones of each kind, and per assigned field (name, default, factory)."""
    positional: list[str] = []
    keyword: list[str] = []
    required: dict[str, list[str]] = {"positional": [], "keyword-only": []}
    steps: list[tuple[str, Any, Any]] = []
    for f in fields(cls):
        if f.init:
            kw = f.kw_only is True
            (keyword if kw else positional).append(f.name)
            if f.default is MISSING and f.default_factory is MISSING:
                required["keyword-only" if kw else "positional"].append(f.name)
        elif f.default_factory is MISSING:  # init=False, no factory: the class attribute
            continue
        steps.append((f.name, f.default, f.default_factory))
    return (tuple(positional), frozenset(keyword),
            [(kind, names) for kind, names in required.items() if names], steps)


def _check_order(cls: Any) -> None:
    """As `dataclass` checks at declaration: no positional field without a default after one
    with a default; no InitVar (not supported here)."""
    declared = {f.name for f in fields(cls)}
    for name, f in cls.__dataclass_fields__.items():
        if name not in declared and "ClassVar" not in str(f.type):
            raise TypeError(f"{cls.__name__}.{name}: @record does not support InitVar")
    seen_default = False
    for f in fields(cls):
        if not f.init or f.kw_only is True:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True)
def record(cls: type[T] | None = None, /, *, frozen: bool = True) -> Any:
    """Declare `cls` as `@dataclass(frozen=True)` would (see the module's docstring);
    `@record(frozen=False)` as `@dataclass` would (assignable fields, unhashable unless the
    class writes `__hash__`), for a class whose instances change, such as a walk's state."""
    if cls is None:
        return lambda c: _declare(c, frozen)
    return _declare(cls, frozen)


def _declare(cls: type[T], frozen: bool) -> type[T]:
    own = vars(cls)
    writes_eq = "__eq__" in own
    class_hash = own.get("__hash__", MISSING)
    # as dataclass decides: a class that writes __eq__ alone has __hash__ = None implicitly
    writes_hash = not (class_hash is MISSING or (class_hash is None and writes_eq))
    documented = bool(cls.__doc__)
    if not documented:  # else dataclass reads the signature of object.__init__ (~7 ms: tokenize)
        cls.__doc__ = "(its signature, below)"
    dataclass(init=False, eq=False, repr=False)(cls)  # in place: the fields, no code compiled
    declared = fields(cls)  # type: ignore[arg-type]
    kind: Any = cls
    kind.__record_frozen__ = frozen
    _check_order(kind)
    if frozen:
        _frozen(kind, tuple(f.name for f in declared))
    if "__init__" not in own:  # undocumented: its docstring is its signature, so compiled now
        kind.__init__ = _lazy_init(kind) if documented else _compiled_init(kind)
    if not documented:  # as dataclass writes it
        import inspect  # only for a record without a docstring

        try:
            signature = str(inspect.signature(kind)).replace(" -> None", "")
        except (TypeError, ValueError):
            signature = ""
        kind.__doc__ = kind.__name__ + signature
    kind.__record_compared__ = _values(tuple(f.name for f in declared if f.compare))
    kind.__record_hashed__ = _values(tuple(
        f.name for f in declared if (f.compare if f.hash is None else f.hash)))
    kind.__record_shown__ = tuple(f.name for f in declared if f.repr)
    if not writes_eq:
        kind.__eq__ = _eq
    if not writes_hash:  # as dataclass: eq without frozen leaves the class unhashable
        kind.__hash__ = _hash if frozen else None
    if "__repr__" not in own:
        kind.__repr__ = _repr
    return cls
