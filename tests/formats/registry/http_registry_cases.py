"""What the HTTP registry tests share: two versions of a key schema, the subject, fast
settings, a password that must never show, opening an HttpRegistry and expecting a
secret-free error."""

from __future__ import annotations

from typing import Any

import pytest

from keyguard.formats.errors import KeyguardError
from keyguard.formats.registry.connect import open_registry
from keyguard.formats.registry.http import HttpRegistry

KEY_V1 = ('{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated",'
          '"fields":[{"name":"user_region","type":"string"}]}')
KEY_V2 = ('{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated",'
          '"fields":[{"name":"user_region","type":"string"},'
          '{"name":"shard","type":["null","int"],"default":null}]}')
SUBJECT = "pageviews_per_region-key"
FAST = {"retries": "0", "timeout": "2s"}
PASSWORD = "s3cr3t-PASSWORD"


def open_http(url: str, config: dict[str, Any] | None = None, **env: str) -> HttpRegistry:
    """The registry at `url`, with FAST settings under `config`."""
    reg = open_registry(url, {**FAST, **(config or {})}, environ=env)
    assert isinstance(reg, HttpRegistry)
    return reg


def fails(exc_type: type[KeyguardError], call: Any, *secrets: str) -> KeyguardError:
    """The error `call` raises, checked to name none of `secrets` anywhere."""
    with pytest.raises(exc_type) as info:
        call()
    err = info.value
    for text in (str(err), repr(err), err.message, err.hint or ""):
        for secret in secrets:
            assert secret not in text
    return err
