"""The guard's config file: many topics, one registry, optional broker access.

```toml
registry = "file://schemas"        # or https://sr:8081 (credentials from the environment)
bootstrap = "broker:9092"          # optional: scan the topics for the key schema ids in use
require-subject = true             # optional: a subject with no versions is breaking (KG015)
ignore = ["KG701"]                 # optional: rule IDs or categories whose findings do not count
rules-of = "confluent"             # optional: whose compatibility rules judge values (RULES_OF)
# ...or one rule accepted with a reason, optionally at one schema path (a field):
# ignore = ["KG701", {rule = "KG101", reason = "region is fixed per tenant", path = "region"}]

# Or, with connection options (REGISTRY_OPTIONS, no secrets), instead of registry = "...":
# [registry]
# url = "https://sr:8081"
# timeout = "5s"
# "ssl.truststore.location" = "ca.pem"

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
require-subject = false            # optional: this topic's own choice
ignore = ["key-placement"]         # optional: ignored for this topic only (on top of the global)
[topics.options]                   # format options, Flink's table option names
"key.json.timestamp-format.standard" = "ISO-8601"

[[topics]]                         # or the table as Flink declares it: name, formats, options,
flink-ddl = "flink/orders.sql"     # key.fields-prefix, partitioner and candidates from the DDL
```

Secrets do not belong here: SASL passwords and registry credentials come from the environment
(`KEYGUARD_KAFKA_SASL_PASSWORD`, `KEYGUARD_REGISTRY_USER_INFO`, ...), so the file can be committed.
Every key is checked for its type; an unknown key or a wrong type exits 2 naming the file and the
key. How these settings rank against the command line and the environment:
`keyguard.formats.registry.settings` (explicit option > config file > environment > default).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.registry.connect import REGISTRY_OPTIONS
from keyguard.formats.registry.options import is_registry_option
from keyguard.formats.secrets import is_secret_key

# Declared in guard/entry.py (the command line builds them without this module); re-exported.
from keyguard.guard.entry import GuardConfig as GuardConfig
from keyguard.guard.entry import TopicEntry as TopicEntry
from keyguard.guard.options import (
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PARTITIONER,
    REQUIRE_SUBJECT,
    RULES_OF,
    SCAN_LIMIT,
    VALUE_FORMAT,
)

if TYPE_CHECKING:
    from keyguard.formats.flink_ddl import FlinkTable
    from keyguard.guard.suppress import Suppression

#: Every key of a [[topics]] entry and of the top level, with the TOML type it must have.
_TOPIC_KEYS: dict[str, tuple[type, ...]] = {
    "name": (str,), "key-format": (str,), "value-format": (str, bool), "key-schema": (str,),
    "value-schema": (str,), "partitions": (int,), "partitioner": (str,), "options": (dict,),
    "key-fields-prefix": (str,), "require-subject": (bool,), "ignore": (list,),
    "flink-ddl": (str,)}
#: What a topic's Flink DDL says: an entry giving these too would say it twice.
_FROM_DDL = (KEY_FORMAT.key, VALUE_FORMAT.key, KEY_FIELDS_PREFIX.key, PARTITIONER.key)
_TOP_KEYS: dict[str, tuple[type, ...]] = {
    "registry": (str, dict), "bootstrap": (str,), "kafka": (dict,), "topics": (list,),
    "scan-limit": (int,), "require-subject": (bool,), "ignore": (list,), "rules-of": (str,)}
_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", dict: "a table",
               list: "an array of tables"}
#: Keys whose type is more specific than their TOML type.
_KEY_TYPE_NAMES = {"ignore": "an array of rule IDs or categories (strings)"}


def load_config(path: str | Path, *, ddl_connections: bool = False) -> GuardConfig:
    """The config file at `path`; its topics' Flink DDLs use their connection options only
    with `ddl_connections` (--flink-ddl-connections)."""
    p = Path(path)
    doc = _read_toml(p)
    _check_keys(doc, _TOP_KEYS, str(p))
    kafka = _kafka(doc.get("kafka", {}), p)
    registry, registry_options = _registry(doc.get("registry"), p)
    topics = tuple(_topic(t, p, f"{p}: topics[{i}]", registry_given="registry" in doc,
                          use_connections=ddl_connections)
                   for i, t in enumerate(doc.get("topics", [])))
    scan_limit = doc.get(SCAN_LIMIT.key, SCAN_LIMIT.default_value)
    if scan_limit < 0:
        raise InvalidOptionError(f"{p}: scan-limit must not be negative, got {scan_limit}")
    return GuardConfig(
        registry=registry,
        registry_options=registry_options,
        require_subject=doc.get(REQUIRE_SUBJECT.key, REQUIRE_SUBJECT.default_value),
        bootstrap=doc.get("bootstrap"),
        kafka=kafka,
        topics=topics,
        scan_limit=scan_limit,
        rules_of=RULES_OF.parse(doc.get(RULES_OF.key, RULES_OF.default_value), where=str(p)),
        ignore=_ignore(doc, str(p)),
        suppressions=_suppressions(doc, str(p)),
        base=p.parent,
    )


def _read_toml(p: Path) -> dict[str, Any]:
    """The file's TOML document; a file that cannot be read or parsed exits 2, saying why."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidOptionError(f"cannot read config file {p}: {exc.strerror}",
                                 hint="check the --config path") from None
    except UnicodeDecodeError as exc:
        raise InvalidOptionError(f"config file {p} is not UTF-8 text: {exc.reason} at byte "
                                 f"{exc.start}", hint="save it as UTF-8 TOML") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidOptionError(f"{p}: not valid TOML: {exc}",
                                 hint="see https://toml.io for the syntax") from None


def _kafka(table: Mapping[str, Any], p: Path) -> dict[str, Any]:
    """The [kafka] table: flat librdkafka properties, no secrets."""
    kafka = dict(table)
    leaked = [k for k in kafka if is_secret_key(k)]
    if leaked:
        raise InvalidOptionError(
            f"{p}: [kafka] sets {', '.join(leaked)}; secrets do not belong in a committed file",
            hint="set them in the environment, e.g. KEYGUARD_KAFKA_SASL_PASSWORD",
        )
    for k, v in kafka.items():
        if isinstance(v, (dict, list)):
            raise InvalidOptionError(f"{p}: [kafka] {k} must be a string, number or boolean",
                                     hint="librdkafka properties are flat KEY = VALUE")
    return kafka


def _topic(t: Any, p: Path, where: str, *, registry_given: bool,
           use_connections: bool = False) -> TopicEntry:
    """One `[[topics]]` entry, checked: its own settings, or a Flink DDL's table."""
    _check_topic(t, where)
    if "flink-ddl" in t:
        return _flink_entry(t, p, where, registry_given=registry_given,
                            use_connections=use_connections)
    return TopicEntry(
        name=t["name"],
        key_format=t.get(KEY_FORMAT.key, KEY_FORMAT.default_value),
        value_format=t.get(VALUE_FORMAT.key, VALUE_FORMAT.default_value) or None,
        key_schema=_resolve(p.parent, t.get("key-schema")),
        value_schema=_resolve(p.parent, t.get("value-schema")),
        partitions=t.get("partitions"),
        partitioner=t.get(PARTITIONER.key, PARTITIONER.default_value),
        key_fields_prefix=t.get(KEY_FIELDS_PREFIX.key, KEY_FIELDS_PREFIX.default_value),
        options=dict(t.get("options", {})),
        require_subject=t.get("require-subject"),
        ignore=_ignore(t, where),
        suppressions=_suppressions(t, where),
    )


def _check_topic(t: Any, where: str) -> None:
    """A `[[topics]]` entry's keys, types and values, named with the entry."""
    if not isinstance(t, dict):
        raise InvalidOptionError(f"{where} must be a table", hint="write [[topics]]")
    _check_keys(t, _TOPIC_KEYS, where)
    if "flink-ddl" not in t and ("name" not in t or not t["name"].strip()):
        raise InvalidOptionError(f"{where}: every topic needs a name",
                                 hint='add name = "the-topic" (or flink-ddl = "table.sql")')
    if t.get("value-format") is True:
        raise InvalidOptionError(f"{where}: value-format must be a format name, or false "
                                 "for none")
    if "partitions" in t and t["partitions"] < 1:
        raise InvalidOptionError(f"{where}: partitions must be at least 1, got "
                                 f"{t['partitions']}")
    bad_opts = [k for k, v in t.get("options", {}).items() if isinstance(v, (dict, list))]
    if bad_opts:
        raise InvalidOptionError(f"{where}: options {', '.join(bad_opts)} must be strings, "
                                 "numbers or booleans", hint="quote dotted option names: "
                                 '"key.json.timestamp-format.standard" = "ISO-8601"')


def entry_of_flink_table(table: FlinkTable, *, name: str | None = None,
                         options: Mapping[str, Any] | None = None,
                         registry_given: bool = False, use_connections: bool = False,
                         **fields: Any) -> TopicEntry:
    """The topic entry a Flink table describes (the TOML's `flink-ddl`, `check --flink-ddl`,
    and whoever else takes a DDL: audit, migrate). `options` (Flink names) go on top of the
    DDL's format options; `fields` are the entry's other settings (partitions, key_schema...).

    `registry_given`: the run names its registry itself (--registry, the config's registry),
    so the DDL's registry connection options (its url, the production registry) are left out:
    they say where Flink looks schemas up, not how bytes are written. They count only with
    `use_connections` (--flink-ddl-connections; `keyguard.guard.request.ddl_notes`)."""
    drop = registry_given or not use_connections
    ddl_options = {f"{role}.{fmt}.{k}": v
                   for role, fmt in (("key", table.key_format), ("value", table.value_format))
                   for k, v in table.format_options(role).items()
                   if not (drop and (k == "url" or is_registry_option(k)))}
    return TopicEntry(
        name=name or table.topic,
        key_format=table.key_format,
        value_format=table.value_format,
        key_fields_prefix=table.key_fields_prefix,
        partitioner=table.producer_partitioner,
        options={**ddl_options, **(options or {})},
        flink_table=table,
        **fields,
    )


def _flink_entry(t: Mapping[str, Any], p: Path, where: str, *, registry_given: bool,
                 use_connections: bool = False) -> TopicEntry:
    """A `[[topics]]` entry with `flink-ddl`: the DDL's table, the entry's other settings."""
    from keyguard.formats.flink_ddl import load_flink_ddl  # lazy: only configs with a Flink DDL

    twice = [k for k in _FROM_DDL if k in t]
    if twice:
        raise InvalidOptionError(
            f"{where}: {', '.join(twice)} and flink-ddl both say how the topic is written",
            hint="drop them: the DDL's WITH options say it (override a format option in "
                 "[topics.options])")
    table = load_flink_ddl(_resolve(p.parent, t["flink-ddl"]) or t["flink-ddl"])
    if "name" in t and t["name"] != table.topic:
        raise InvalidOptionError(
            f"{where}: name {t['name']!r} is not the DDL's topic {table.topic!r}",
            hint="drop name: the DDL's 'topic' option names the topic")
    return entry_of_flink_table(
        table, options=dict(t.get("options", {})), registry_given=registry_given,
        use_connections=use_connections, key_schema=_resolve(p.parent, t.get("key-schema")),
        value_schema=_resolve(p.parent, t.get("value-schema")),
        partitions=t.get("partitions"), require_subject=t.get("require-subject"),
        ignore=_ignore(t, where), suppressions=_suppressions(t, where))


def _check_keys(table: Mapping[str, Any], allowed: Mapping[str, tuple[type, ...]],
                where: str) -> None:
    """Unknown keys and wrong types, named with the file (and the entry) they are in."""
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        import difflib

        near = [m for k in unknown for m in difflib.get_close_matches(k, list(allowed), 1)]
        raise InvalidOptionError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
            hint=(f"did you mean {', '.join(near)}? " if near else "")
            + "allowed: " + ", ".join(sorted(allowed)))
    for key, value in table.items():
        types = allowed[key]
        # TOML booleans are not integers here, whatever Python thinks.
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            want = _KEY_TYPE_NAMES.get(key) or " or ".join(_TYPE_NAMES[t] for t in types)
            raise InvalidOptionError(
                f"{where}: {key} must be {want}, got {type(value).__name__} {value!r}"
                if not is_secret_key(key) else f"{where}: {key} must be {want}")


def _ignore(table: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """`ignore = ["KG701", "key-bytes"]`: each a known rule ID or category (exit 2 otherwise);
    its tables are `_suppressions`."""
    given = table.get("ignore", [])
    if not all(isinstance(n, (str, dict)) for n in given):
        raise InvalidOptionError(f"{where}: ignore must be {_KEY_TYPE_NAMES['ignore']}, or "
                                 "tables {rule = ..., reason = ..., path = ...}",
                                 hint='e.g. ignore = ["KG701", {rule = "KG101", reason = '
                                      '"region is fixed per tenant"}]')
    names = [n for n in given if isinstance(n, str)]
    if not names:
        return ()
    from keyguard.guard.selection import (
        selectors,  # lazy: CLI start-up (~2.5 ms; only when ignoring)
    )

    return tuple(s.token for s in selectors(names, where=f"{where}: ignore"))


def _suppressions(table: Mapping[str, Any], where: str) -> tuple[Suppression, ...]:
    """The tables of `ignore`: `{rule = "KG101", reason = "...", path = "region"}`, each with a
    reason (exit 2 naming the file and the entry otherwise)."""
    given = table.get("ignore", [])
    if not any(isinstance(n, dict) for n in given):
        return ()
    from keyguard.guard.suppress import of_config  # lazy: CLI start-up (only when accepting)

    return tuple(of_config(n, f"{where}: ignore[{i}]") for i, n in enumerate(given)
                 if isinstance(n, dict))


def _registry(value: Any, p: Path) -> tuple[str | None, dict[str, Any]]:
    """`registry = "URL"`, or a [registry] table: url plus connection options (no secrets)."""
    if value is None or isinstance(value, str):
        return value, {}

    options = dict(value)
    url = options.pop("url", None)
    if not isinstance(url, str) or not url.strip():
        raise InvalidOptionError(f"{p}: [registry] needs url = \"...\"",
                                 hint="e.g. url = \"https://sr:8081\"")
    leaked = [k for k in options if is_secret_key(k) and not k.endswith(
        ("credentials-source", ".location"))]
    if leaked:
        raise InvalidOptionError(
            f"{p}: [registry] sets {', '.join(leaked)}; secrets do not belong in a committed "
            "file", hint="set KEYGUARD_REGISTRY_USER_INFO or KEYGUARD_REGISTRY_BEARER_TOKEN")
    REGISTRY_OPTIONS.validate(options, where=f"{p}: [registry]")
    return url, options


def _resolve(base: Path, path: str | None) -> str | None:
    if path is None or path.startswith("subject:") or Path(path).is_absolute():
        return path
    return str(base / path)
