"""The guard's config file: many topics, one registry, optional broker access.

```toml
registry = "file://schemas"        # or https://sr:8081 (credentials from the environment)
bootstrap = "broker:9092"          # optional: scan the topics for the key schema ids in use

[kafka]                            # optional librdkafka properties (security.protocol, sasl.*)
"security.protocol" = "SASL_SSL"

[[topics]]
name = "pageviews_per_region"
key-format = "avro-confluent"      # default: avro-confluent
value-format = "avro-confluent"
key-schema = "schemas/candidates/pageviews-key.avsc"   # optional candidate
value-schema = "schemas/candidates/pageviews-value.avsc"
partitions = 6                     # optional: the partition count producers will see
partitioner = "murmur2"
[topics.options]                   # format options, Flink's table option names
"key.json.timestamp-format.standard" = "ISO-8601"
```

Secrets do not belong here: SASL passwords and registry credentials come from the environment
(`KEYGUARD_KAFKA_SASL_PASSWORD`, `KEYGUARD_REGISTRY_USER_INFO`, ...), so the file can be committed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import InvalidOptionError
from formats.options import strip_prefix
from formats.secrets import is_secret_key

_TOPIC_KEYS = {"name", "key-format", "value-format", "key-schema", "value-schema",
               "partitions", "partitioner", "options", "key-fields-prefix"}
_TOP_KEYS = {"registry", "bootstrap", "kafka", "topics", "scan-limit"}
#: librdkafka properties whose value may come from KEYGUARD_KAFKA_<NAME> (dots -> underscores).
_KAFKA_ENV_PREFIX = "KEYGUARD_KAFKA_"


@dataclass(frozen=True)
class TopicEntry:
    name: str
    key_format: str = "avro-confluent"
    value_format: str | None = "avro-confluent"
    key_schema: str | None = None
    value_schema: str | None = None
    partitions: int | None = None
    partitioner: str = "murmur2"
    key_fields_prefix: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def format_options(self, role: str, fmt: str | None) -> dict[str, Any]:
        return strip_prefix(self.options, f"{role}.{fmt}.") if fmt else {}


@dataclass(frozen=True)
class GuardConfig:
    registry: str | None = None
    bootstrap: str | None = None
    kafka: Mapping[str, Any] = field(default_factory=dict)
    topics: tuple[TopicEntry, ...] = ()
    scan_limit: int = 10_000
    #: Directory the file was read from: relative schema paths resolve against it.
    base: Path = Path(".")


def load_config(path: str | Path) -> GuardConfig:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidOptionError(f"cannot read config file {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidOptionError(f"{p}: not valid TOML: {exc}") from None
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise InvalidOptionError(f"{p}: unknown keys {', '.join(sorted(unknown))}",
                                 hint="allowed: " + ", ".join(sorted(_TOP_KEYS)))
    kafka = dict(doc.get("kafka", {}))
    leaked = [k for k in kafka if is_secret_key(k)]
    if leaked:
        raise InvalidOptionError(
            f"{p}: [kafka] sets {', '.join(leaked)}; secrets do not belong in a committed file",
            hint="set them in the environment, e.g. KEYGUARD_KAFKA_SASL_PASSWORD",
        )
    topics = []
    for i, t in enumerate(doc.get("topics", [])):
        where = f"{p}: topics[{i}]"
        bad = set(t) - _TOPIC_KEYS
        if bad:
            raise InvalidOptionError(f"{where}: unknown keys {', '.join(sorted(bad))}",
                                     hint="allowed: " + ", ".join(sorted(_TOPIC_KEYS)))
        if "name" not in t:
            raise InvalidOptionError(f"{where}: every topic needs a name")
        topics.append(TopicEntry(
            name=t["name"],
            key_format=t.get("key-format", "avro-confluent"),
            value_format=t.get("value-format", "avro-confluent") or None,
            key_schema=_resolve(p.parent, t.get("key-schema")),
            value_schema=_resolve(p.parent, t.get("value-schema")),
            partitions=t.get("partitions"),
            partitioner=t.get("partitioner", "murmur2"),
            key_fields_prefix=t.get("key-fields-prefix", ""),
            options=dict(t.get("options", {})),
        ))
    return GuardConfig(
        registry=doc.get("registry"),
        bootstrap=doc.get("bootstrap"),
        kafka=kafka,
        topics=tuple(topics),
        scan_limit=int(doc.get("scan-limit", 10_000)),
        base=p.parent,
    )


def _resolve(base: Path, path: str | None) -> str | None:
    if path is None or path.startswith("subject:") or Path(path).is_absolute():
        return path
    return str(base / path)


def kafka_properties(
    configured: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """librdkafka properties: the config file's, plus KEYGUARD_KAFKA_* from the environment.

    `KEYGUARD_KAFKA_SASL_PASSWORD=x` becomes `sasl.password=x`; the environment wins.
    """
    env = os.environ if environ is None else environ
    out = dict(configured)
    for name, value in env.items():
        if name.startswith(_KAFKA_ENV_PREFIX):
            out[name[len(_KAFKA_ENV_PREFIX):].lower().replace("_", ".")] = value
    return out
