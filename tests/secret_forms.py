"""The forms a secret must never appear in, in any output: plain, URL-quoted, JSON-escaped,
and base64 (standard and URL-safe, padded or not; of user:password and of each part)."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus


def _b64(data: str) -> set[str]:
    raw = data.encode()
    out = set()
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out |= {encoded, encoded.rstrip("=")}
    return out


def spellings(secret: str) -> set[str]:
    """The forms a secret must never be found in (those long enough to search for)."""
    out = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret),
           json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    out |= _b64(secret)
    if ":" in secret:
        user, _, password = secret.partition(":")
        out |= spellings(password) | _b64(user)
    return {s for s in out if len(s) >= 6}


def leaked(text: str, *secrets: str) -> list[str]:
    """Each form of `secrets` found in `text`."""
    return sorted({form for secret in secrets for form in spellings(secret) if form in text})
