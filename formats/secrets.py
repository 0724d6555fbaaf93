"""Keeping credentials out of logs, reports and exceptions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Option keys whose values are secrets, whatever prefix they carry
# (key.avro-confluent.basic-auth.user-info, properties.sasl.password, ...).
_SECRET_KEY = re.compile(
    r"(password|passwd|secret|user-info|user\.info|userinfo|token(?!.*source)|"
    r"credentials(?!-source)|sasl\.jaas\.config|ssl\.key\.pem|api[._-]?key)",
    re.IGNORECASE,
)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")

REDACTED = "***"


def is_secret_key(key: str) -> bool:
    """True when an option key names a credential (its value must never be shown)."""
    return bool(_SECRET_KEY.search(key))


def redact_url(url: str) -> str:
    """Drop `user:password@` from a URL."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", url)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` that is safe to print."""
    return {
        k: (REDACTED if is_secret_key(k) else redact_url(v) if isinstance(v, str) else v)
        for k, v in options.items()
    }


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """Remove known secret values and URL credentials from free text."""
    out = redact_url(text)
    for s in secrets:
        if s:
            out = out.replace(s, REDACTED)
    return out
