"""The one error hierarchy of keyguard.

Every error says what failed, where (topic, subject, column, row, option) and what to do next,
and carries the CLI exit code it maps to. Messages never contain credentials: anything that
could hold a secret goes through `keyguard.formats.secrets.redact` before it reaches a message.
"""

from __future__ import annotations

from keyguard.formats.secrets import redact

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_BREAKING = 1
EXIT_INVALID = 2
EXIT_UNREACHABLE = 3
EXIT_INTERNAL = 4

#: One line per exit code, for the docs and `--help` (a test keeps them in sync).
EXIT_CODES = {
    EXIT_OK: "nothing breaking",
    EXIT_BREAKING: "breaking findings",
    EXIT_INVALID: "invalid input or usage (the message names what, where and what to do)",
    EXIT_UNREACHABLE: "registry or broker unreachable, authentication failed, or timed out",
    EXIT_INTERNAL: "keyguard itself failed (a bug: rerun with --debug and report it)",
}


class KeyguardError(Exception):
    """Base of every error keyguard raises on purpose."""

    exit_code = EXIT_INVALID
    #: A stable machine name of the error's kind, shown as `keyguard: error (KIND): ...`
    #: and in the machine report formats.
    kind = "invalid-input"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        # Redacted here, once, so that no path (the CLI, a Spark task, a library caller's
        # log) can show a credential that slipped into a message.
        self.message = redact(message)
        self.hint = None if hint is None else redact(hint)
        super().__init__(self.message if self.hint is None else f"{self.message} ({self.hint})")

    # The exception a KeyguardError was raised from is often a client's, whose text may quote
    # a credential (a registry error body repeating the Authorization header). Whoever walks
    # the chain (traceback printing, Spark, a library caller) sees it only when it was not
    # suppressed with `from None`, and with its text redacted when that text holds a secret.

    @property  # type: ignore[override]
    def __context__(self) -> BaseException | None:
        if self.__suppress_context__:
            return None
        return _safe_link(_CONTEXT.__get__(self))

    @__context__.setter
    def __context__(self, value: BaseException | None) -> None:
        _CONTEXT.__set__(self, value)

    @property  # type: ignore[override]
    def __cause__(self) -> BaseException | None:
        return _safe_link(_CAUSE.__get__(self))

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:
        _CAUSE.__set__(self, value)


_CONTEXT = BaseException.__dict__["__context__"]
_CAUSE = BaseException.__dict__["__cause__"]


class RedactedException(Exception):
    """Stands in, in an exception chain, for an exception whose text held a credential."""


def _safe_link(exc: BaseException | None) -> BaseException | None:
    if exc is None or isinstance(exc, KeyguardError):
        return exc
    text = f"{type(exc).__name__}: {exc}"
    if redact(text) == text:
        return exc
    return RedactedException(redact(text))


#: The kind of an error keyguard did not raise on purpose (exit 4), in the machine formats.
INTERNAL_KIND = "internal"


class UsageError(KeyguardError):
    """A command line that does not say what to do (a missing argument, a malformed KEY=VALUE)."""

    kind = "usage"


class InvalidOptionError(KeyguardError):
    """An unknown option, a bad option value, or options that conflict."""

    kind = "invalid-option"


class SchemaError(KeyguardError):
    """A schema that cannot be parsed, converted or projected."""

    kind = "invalid-schema"


class UnsupportedTypeError(SchemaError):
    """A column type the chosen format cannot represent (a MAP in raw or csv)."""

    kind = "unsupported-type"


class EncodeError(KeyguardError):
    """A value that does not fit its column type or format, found while encoding a row."""

    kind = "encode"


class NullKeyError(EncodeError):
    """A null in a primary-key column: a key that Kafka consumers could never address."""

    kind = "null-key"


class DecodeError(KeyguardError):
    """Bytes that are not a valid record of the expected format and schema."""

    kind = "decode"


class RegistryError(KeyguardError):
    """A schema registry answered with an error that is the caller's to fix (404, 422, ...)."""

    kind = "registry"


class RegistryUnavailableError(RegistryError):
    """A schema registry could not be reached, refused the credentials, or timed out."""

    kind = "registry-unavailable"
    exit_code = EXIT_UNREACHABLE


class BrokerUnavailableError(KeyguardError):
    """A Kafka broker could not be reached, refused the credentials, or timed out."""

    kind = "broker-unavailable"
    exit_code = EXIT_UNREACHABLE


class DeliveryError(KeyguardError):
    """A write that could not be completed: some records were not acknowledged."""

    kind = "delivery"
    exit_code = EXIT_UNREACHABLE
