"""Options declared once, validated as a whole, like Flink's ConfigOption and factories.

Each format (and the Spark connector) declares its options as `Option` values: key, type,
default, description. `OptionSet.validate` turns user-supplied strings into typed values and
rejects unknown keys, naming them and listing what is allowed. The same declarations render
the docs' option tables and the CLI's help, so the three can never disagree.

The three classes are plain classes whose fields are `Final`, not frozen dataclasses: those
generate their methods when the module is imported, which every CLI start would pay for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from difflib import get_close_matches
from enum import Enum
from typing import Any, Final, Generic, TypeVar, overload

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.secrets import REDACTED, is_secret_key, redact_options, register_options

V = TypeVar("V")
E = TypeVar("E", bound="OptionEnum")


class OptionEnum(str, Enum):
    """The values of an enum-typed option. A member is its option text: it equals, prints and
    formats as it (`enum.StrEnum`, which Python 3.10 lacks)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValueError("expected true or false")


def _parse_int(raw: str) -> int:
    return int(raw.strip())


def _parse_duration_ms(raw: str) -> int:
    """Flink durations: `1s`, `500 ms`, `2 min`, `1h`; a bare number is milliseconds."""
    text = raw.strip().lower().replace(" ", "")
    units = (("ms", 1), ("min", 60_000), ("s", 1000), ("m", 60_000), ("h", 3_600_000),
             ("d", 86_400_000))
    for suffix, factor in units:
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * factor
    if text.isdigit():
        return int(text)
    raise ValueError("expected a duration such as 500ms, 1s, 2min")


def _format_duration(ms: int) -> str:
    for unit, factor in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


PARSERS: dict[type, Callable[[str], Any]] = {bool: _parse_bool, int: _parse_int, str: str}


class Option(Generic[V]):
    """One option: its key, the Python type of its value, its default and what it does.

    `parser` parses the raw string (default: the parser for `type`); `fallback_keys` are older
    or alternative spellings accepted for the same option; `minimum` is the least value of an
    int option (durations included): none is negative by default.
    """

    __slots__ = ("choices", "default", "description", "fallback_keys", "key", "minimum",
                 "parser", "required", "type")

    def __init__(self, key: str, type: type, default: V | None, description: str,
                 choices: tuple[str, ...] | None = None, required: bool = False,
                 parser: Callable[[str], Any] | None = None, fallback_keys: tuple[str, ...] = (),
                 minimum: int | None = None) -> None:
        self.key: Final = key
        self.type: Final = type
        self.default: Final = default
        self.description: Final = description
        self.choices: Final = choices
        self.required: Final = required
        self.parser: Final = parser
        self.fallback_keys: Final = fallback_keys
        self.minimum: Final = minimum

    def __repr__(self) -> str:
        return f"Option({self.key!r})"

    @property
    def default_value(self) -> V:
        """The default typed as the option's values: for an option whose default is not None
        (a flag's default on the command line, a config file's default)."""
        if self.default is None:
            raise TypeError(f"option '{self.key}' has no default")
        return self.default

    def parse(self, raw: Any, *, where: str) -> V:
        if not isinstance(raw, str):
            if isinstance(raw, self.type) and not (self.type is int and isinstance(raw, bool)):
                value: Any = raw
            else:
                raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if isinstance(raw, str):
            try:
                value = (self.parser or PARSERS[self.type])(raw)
            except (ValueError, KeyError) as exc:
                # The parser's own message may quote the value: never show it for secrets.
                detail = REDACTED if is_secret_key(self.key) else f"{raw!r}: {exc}"
                raise InvalidOptionError(
                    f"{where}: option '{self.key}' has an invalid value {detail}"
                ) from None
        if self.type is int and isinstance(value, int):
            least = 0 if self.minimum is None else self.minimum
            if value < least:
                detail = REDACTED if is_secret_key(self.key) else repr(value)
                raise InvalidOptionError(
                    f"{where}: option '{self.key}' must be at least {least}, got {detail}"
                )
        if self.choices is not None:
            canon = {c.upper(): c for c in self.choices}
            if str(value).upper() not in canon:
                raise InvalidOptionError(
                    f"{where}: option '{self.key}' must be one of {', '.join(self.choices)}, "
                    f"got {value!r}"
                )
            value = canon[str(value).upper()]
            if issubclass(self.type, Enum):
                value = self.type(value)  # an enum-typed option reads back as its member
        return value  # type: ignore[no-any-return]


def duration_option(key: str, default: int | None, description: str) -> Option[int]:
    return Option(key, int, default, description, parser=_parse_duration_ms)


def enum_option(key: str, enum: type[E], default: E | None, description: str) -> Option[E]:
    """An option whose values are the members of `enum` (members equal their option text),
    matched case-insensitively and read back as the member."""
    return Option(key, enum, default, description,
                  choices=tuple(str(m.value) for m in enum), parser=str)


class OptionSet:
    """The declared options of one component (a format, the connector); keys under one of
    `passthrough_prefixes` are passed through untouched (e.g. `properties.` for the Kafka
    producer)."""

    __slots__ = ("options", "owner", "passthrough_prefixes")

    def __init__(self, owner: str, options: tuple[Option[Any], ...],
                 passthrough_prefixes: tuple[str, ...] = ()) -> None:
        self.owner: Final = owner
        self.options: Final = options
        self.passthrough_prefixes: Final = passthrough_prefixes

    def __repr__(self) -> str:
        return f"OptionSet({self.owner!r}, {self.keys()!r})"

    def __iter__(self) -> Any:
        return iter(self.options)

    def keys(self) -> list[str]:
        return [o.key for o in self.options]

    def get(self, key: str) -> Option[Any]:
        for o in self.options:
            if o.key == key or key in o.fallback_keys:
                return o
        raise KeyError(key)

    def validate(self, raw: Mapping[str, Any], *, where: str | None = None) -> ResolvedOptions:
        """Typed values for every declared option; unknown keys are one error listing them all."""
        # Credentials first, before anything can print them (keyguard.formats.secrets).
        register_options(raw)
        where = where or self.owner
        self._reject_unknown(raw, where)
        values = {o.key: self._value(o, raw, where) for o in self.options}
        extra = {k: v for k, v in raw.items() if k not in values and not any(
            k in o.fallback_keys for o in self.options)}
        return ResolvedOptions(self.owner, values, extra)

    def _reject_unknown(self, raw: Mapping[str, Any], where: str) -> None:
        """One error naming every key that is neither declared nor passed through."""
        unknown = [
            k
            for k in raw
            if not any(k == o.key or k in o.fallback_keys for o in self.options)
            and not k.startswith(self.passthrough_prefixes or ("\0",))
        ]
        if not unknown:
            return
        hints = []
        for k in unknown:
            close = get_close_matches(k, self.keys(), n=1)
            hints.append(f"'{k}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise InvalidOptionError(
            f"{where}: unsupported option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(hints)}",
            hint="supported options: " + ", ".join(self.keys()),
        )

    @staticmethod
    def _value(o: Option[Any], raw: Mapping[str, Any], where: str) -> Any:
        """The option's value, given under its key or one fallback key, or its default."""
        given = [k for k in (o.key, *o.fallback_keys) if k in raw]
        if len(given) > 1:
            raise InvalidOptionError(
                f"{where}: options {' and '.join(repr(g) for g in given)} are the same "
                "option; give only one"
            )
        if given:
            return o.parse(raw[given[0]], where=where)
        if o.required:
            raise InvalidOptionError(f"{where}: required option '{o.key}' is missing",
                                     hint=o.description)
        return o.default

    def markdown_table(self) -> str:
        """The docs' table for these options."""
        lines = ["| option | type | default | description |", "|---|---|---|---|"]
        for o in self.options:
            is_duration = o.parser is _parse_duration_ms
            typ = " \\| ".join(o.choices) if o.choices else (
                "duration" if is_duration else o.type.__name__)
            default = "(required)" if o.required else ("" if o.default is None else o.default)
            if isinstance(default, bool):
                default = str(default).lower()
            elif is_duration and isinstance(default, int):
                default = _format_duration(default)
            lines.append(f"| `{o.key}` | {typ} | {default} | {o.description} |")
        return "\n".join(lines)


class ResolvedOptions:
    """Validated, typed option values; `extra` holds passthrough keys (e.g. `properties.*`).
    Equal when of one owner with equal values."""

    __slots__ = ("extra", "owner", "values")

    def __init__(self, owner: str, values: Mapping[str, Any],
                 extra: Mapping[str, Any] | None = None) -> None:
        self.owner: Final = owner
        self.values: Final = values
        self.extra: Final[Mapping[str, Any]] = {} if extra is None else extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResolvedOptions):
            return NotImplemented
        return (self.owner, self.values, self.extra) == (other.owner, other.values, other.extra)

    __hash__ = None  # type: ignore[assignment]  # its values are mappings

    @overload
    def __getitem__(self, key: Option[V]) -> V: ...
    @overload
    def __getitem__(self, key: str) -> Any: ...

    def __getitem__(self, key: str | Option[Any]) -> Any:
        """The value of an option, read back by its declaration (`opts[URL]`), typed as it
        declares; a string key still works during the transition."""
        return self.values[key.key if isinstance(key, Option) else key]

    def __repr__(self) -> str:
        # Options hold credentials (basic-auth.user-info, sasl.password): never print them.

        return (f"ResolvedOptions({self.owner!r}, {redact_options(self.values)!r}, "
                f"{redact_options(self.extra)!r})")

    def get(self, key: str | Option[Any], default: Any = None) -> Any:
        return self.values.get(key.key if isinstance(key, Option) else key, default)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Passthrough options under `prefix`, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.extra.items() if k.startswith(prefix)}


def strip_prefix(options: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The options under `prefix` (e.g. `key.json.`), with the prefix removed."""
    return {k[len(prefix):]: v for k, v in options.items() if k.startswith(prefix)}


def merge(*option_sets: Iterable[Option[Any]]) -> tuple[Option[Any], ...]:
    return tuple(o for s in option_sets for o in s)
