"""Keeping credentials out of messages, reports, logs and exceptions.

Two defences, applied together by `redact`:

- Known values. Every place that reads a credential (registry user info and bearer token, SASL
  password and JAAS config, TLS key passwords, `KEYGUARD_*` environment variables) registers
  it with `register_secret`. A registered value is then removed from any text in every form it
  is likely to take on the way out: plain, base64 (standard and URL-safe, padded or not, wrapped
  across lines, and as part of the base64 of a longer string such as `user:password`),
  URL-encoded, JSON-escaped, Python-repr-escaped and XML-escaped.
- Shapes. Whatever was registered: `user:password@` in URLs, the value of an `Authorization`
  header of any scheme, `Basic <base64 of user:password>`, `Bearer <token>`, and
  `password=...` in a JAAS config.

Secrets shorter than `MIN_SECRET_LENGTH` are not registered: scrubbing a two-letter string
from every message would make them unreadable, and such a password protects nothing.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging
from urllib.parse import quote, quote_plus, unquote

# Option keys whose values are secrets, whatever prefix they carry
# (key.avro-confluent.basic-auth.user-info, properties.sasl.password, ...).
_SECRET_KEY = re.compile(
    r"(password|passwd|secret|user-info|user\.info|userinfo|token(?!.*source)|"
    r"credentials(?!-source)|sasl\.jaas\.config|ssl\.key\.pem|api[._-]?key)",
    re.IGNORECASE,
)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s\"'<>]+@")
# `Authorization: Basic ...`, `'Authorization': 'Bearer ...'`, `"authorization":"..."`.
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<value>[^\"'\r\n,;}\]]+)", re.IGNORECASE)
_BASIC = re.compile(r"\bBasic\s+(?P<value>[A-Za-z0-9+/_-]{4,}={0,2})")
_BEARER = re.compile(r"\bBearer\s+(?P<value>[A-Za-z0-9._~+/-]{8,}=*)")
# `password="..."` in a sasl.jaas.config, `sasl.password=...` in a properties line.
_PASSWORD_FIELD = re.compile(
    r"(?P<head>\b[\w.-]*(?:password|passwd|secret)\s*=\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;}&\"']+)", re.IGNORECASE)

REDACTED = "***"
MIN_SECRET_LENGTH = 4
# A shorter run of base64 characters is too likely to occur by chance (in hex, in ids).
_MIN_CORE = 6
#: Loggers keyguard writes to: each gets a `RedactingFilter` (a filter on a parent logger
#: does not see records of its children).
LOGGERS = ("keyguard", "keyguard.kafka", "keyguard.sparkio", "keyguard.registry",
           "keyguard.cli")

_lock = threading.Lock()
_known: set[str] = set()
_known_encoded: set[str] = set()  # only their base64 is redacted (the user of user:password)
_pattern: re.Pattern[str] | None = None


def is_secret_key(key: str) -> bool:
    """True when an option key names a credential (its value must never be shown)."""
    return bool(_SECRET_KEY.search(key))


#: Option names that look like a credential even when misspelled or unknown (`...tokn`,
#: `pwd`, `my.api.key`): their values are masked wherever source text is quoted.
_CREDENTIAL_WORD = re.compile(r"pass|pwd|secret|tok|jaas|user-?info|auth|cred", re.IGNORECASE)
#: Names with `key` in them that name no credential (the key format and its columns).
_NOT_SECRET_KEY_NAMES = re.compile(r"^(?:key\.|value\.|primary-key$)|key-?fields?|"
                                   r"fields-prefix")
#: `'name' = 'value'` in source text; a SQL string may span lines, and an unterminated one
#: runs to the end of the text.
_QUOTED_OPTION = re.compile(r"'((?:[^'\n]|'')*)'(\s*=\s*)'((?:[^']|'')*)('|\Z)")


def looks_secret(name: str) -> bool:
    """An option name that may name a credential (known or not): its value is masked in
    quoted source, whether or not keyguard knows the option."""
    if is_secret_key(name) or _CREDENTIAL_WORD.search(name):
        return True
    return "key" in name.lower() and not _NOT_SECRET_KEY_NAMES.search(name)


def mask_source(text: str) -> str:
    """`text` (a DDL, a config) with the value of every `'name' = 'value'` whose name looks
    like a credential replaced by as many `*`, comments and unterminated values included: what
    an error may quote of it. Lengths are kept, so positions and carets stay right."""
    def mask(m: re.Match[str]) -> str:
        if not looks_secret(m.group(1).replace("''", "'")):
            return m.group(0)
        hidden = re.sub(r"[^\n]", "*", m.group(3))  # lines kept: positions stay right
        return f"'{m.group(1)}'{m.group(2)}'{hidden}{m.group(4)}"
    return _QUOTED_OPTION.sub(mask, text)


def holds_secret(key: str) -> bool:
    """A key whose value is a secret, not the name of a credentials source or a file path."""
    return is_secret_key(key) and not key.endswith(
        ("credentials-source", "credentials.source", ".location"))


# -- registration -----------------------------------------------------------------------------


def register_secret(value: object) -> None:
    """Remember a credential so that `redact` removes it from every text, in every form.

    A `user:password` pair registers the pair and the password. A JAAS config registers the
    whole string and the username/password it carries.
    """
    global _pattern
    if not isinstance(value, str):
        return
    values = {value, value.strip()}
    encoded_only = set()
    if ":" in value:
        user, _, password = value.partition(":")
        values.add(password)
        encoded_only.add(user)  # a user name may be shown, its base64 (half a header) not
    for m in re.finditer(r"password\s*=\s*(\"[^\"]*\"|'[^']*'|\S+?);?(?=\s|$)", value):
        values.add(m.group(1).strip("\"'"))
    values = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
    encoded_only = {v for v in encoded_only if len(v) >= MIN_SECRET_LENGTH}
    with _lock:
        if values <= _known and encoded_only <= _known_encoded:
            return
        _known.update(values)
        _known_encoded.update(encoded_only)
        _pattern = None


def register_secrets(values: Iterable[object]) -> None:
    for v in values:
        register_secret(v)


def register_options(options: Mapping[str, Any]) -> None:
    """Register the value of every option that holds a secret (by its key)."""
    for k, v in options.items():
        if holds_secret(str(k)):
            register_secret(v)


def register_url_credentials(text: str) -> None:
    """Register the `user:password` of every URL in `text` (as given and percent-decoded)."""
    for m in re.finditer(r"[a-zA-Z][a-zA-Z0-9+.-]*://(?P<info>[^/@\s\"'<>]+)@", text):
        info = m.group("info")
        register_secret(info)
        register_secret(unquote(info))
        user, _, password = info.partition(":")
        register_secret(f"{unquote(user)}:{unquote(password)}")


def register_environment(environ: Mapping[str, str]) -> None:
    """Register the credentials keyguard reads from `KEYGUARD_*` environment variables
    (KEYGUARD_REGISTRY_USER_INFO, KEYGUARD_REGISTRY_BEARER_TOKEN, KEYGUARD_KAFKA_SASL_PASSWORD).
    """
    for name, value in environ.items():
        if name.startswith("KEYGUARD_") and is_secret_key(name.lower().replace("_", ".")):
            register_secret(value)


def forget_secrets() -> None:
    """Drop every registered secret (for tests)."""
    global _pattern
    with _lock:
        _known.clear()
        _known_encoded.clear()
        _pattern = None


# -- the forms a secret takes ----------------------------------------------------------------


def _b64_cores(data: bytes) -> set[str]:
    """The base64 characters that depend only on `data`, at each of the three alignments
    it can have inside a longer string, in both alphabets: whatever surrounds `data`
    (a `user:` before the password, padding after it), its base64 contains one of these."""
    out = set()
    n = len(data)
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data + b"\0\0").decode()
        start = -(-8 * offset // 6)  # ceil: the first character made only of data's bits
        end = 8 * (offset + n) // 6  # the last character made only of data's bits, exclusive
        core = encoded[start:end]
        if len(core) >= _MIN_CORE:
            out.add(core)
            out.add(core.replace("+", "-").replace("/", "_"))
    return out


def _b64_forms(data: bytes) -> set[str]:
    out = set()
    for encoded in (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()):
        out.add(encoded)
        out.add(encoded.rstrip("="))
    return out


def forms(secret: str) -> set[str]:
    """Every spelling of `secret` that `redact` removes (besides the line-wrapped base64)."""
    import html  # lazy: CLI start-up (html.entities, ~2 ms; only when a secret is registered)

    data = secret.encode("utf-8")
    out = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret),
           json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
           repr(secret)[1:-1], repr(data)[2:-1], html.escape(secret),
           html.escape(secret, quote=False)}
    out |= _b64_forms(data)
    cores = _b64_cores(data)
    out |= cores
    out |= {quote(c, safe="") for c in cores}
    return {f for f in out if len(f) >= MIN_SECRET_LENGTH}


def _compile() -> re.Pattern[str] | None:
    global _pattern
    with _lock:
        if _pattern is not None or not (_known or _known_encoded):
            return _pattern
        alternatives = {re.escape(f) for v in _known_encoded
                        for f in _b64_forms(v.encode("utf-8")) if len(f) >= _MIN_CORE}
        for secret in _known:
            for f in forms(secret):
                alternatives.add(re.escape(f))
            # base64 wrapped across lines (MIME, PEM: every 64 or 76 characters)
            for core in _b64_cores(secret.encode("utf-8")):
                if len(core) > 8:
                    alternatives.add(r"(?:\r?\n|\\r?\\n)?".join(re.escape(c) for c in core))
        ordered = sorted(alternatives, key=len, reverse=True)
        _pattern = re.compile("|".join(ordered))
        return _pattern


# -- redaction --------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """Drop `user:password@` from a URL."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", url)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` that is safe to print."""
    return {
        k: (REDACTED if is_secret_key(k) else redact(v) if isinstance(v, str) else v)
        for k, v in options.items()
    }


def _basic(m: re.Match[str]) -> str:
    """`Basic <base64 of user:password>`: the credentials go; `Basic authentication` stays."""
    value = m.group("value")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_"
                                   if ("-" in value or "_" in value) else None, validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return f"Basic {REDACTED}" if b":" in decoded else m.group(0)


def _bearer(m: re.Match[str]) -> str:
    value = m.group("value")
    if value.isalpha() and value.islower():  # prose: "Bearer authentication"
        return m.group(0)
    return f"Bearer {REDACTED}"


def _shapes(text: str) -> str:
    text = redact_url(text)
    text = _AUTH_HEADER.sub(lambda m: m.group("head") + REDACTED, text)
    text = _BASIC.sub(_basic, text)
    text = _BEARER.sub(_bearer, text)
    return _PASSWORD_FIELD.sub(lambda m: m.group("head") + REDACTED, text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove credentials from free text: registered secrets (in every form), `secrets`
    given here (registered on the way), and anything shaped like a credential."""
    if not isinstance(text, str):
        text = str(text)
    extra = [s for s in secrets if s]
    if extra:
        register_secrets(extra)
    pattern = _compile()
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _shapes(text)


@functools.lru_cache(maxsize=1)
def _filter() -> RedactingFilter:
    return RedactingFilter()


class RedactingFilter:
    """Redacts a log record's message (its arguments merged in) before any handler sees it
    (a logging filter: any object with `filter(record)`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error handling
            return True
        record.msg, record.args = redact(message), ()
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            import logging  # lazy: loaded already by whoever logged

            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def install_log_filter(names: Iterable[str] = LOGGERS) -> None:
    """Put the redacting filter on keyguard's loggers (idempotent)."""
    import logging  # lazy: CLI start-up (~3 ms; a run that logs nothing never loads it)

    for name in names:
        one = logging.getLogger(name)
        if _filter() not in one.filters:
            one.addFilter(_filter())


def redacting_logger(name: str) -> logging.Logger:
    """keyguard's logger `name`, its records redacted: every module that logs gets its logger
    here, so the filter is on all of keyguard's loggers before the first record."""
    import logging  # lazy: see install_log_filter

    install_log_filter((*LOGGERS, name))
    return logging.getLogger(name)
