"""The guard step of a write, on the driver: plan -> TopicPlan -> Report -> go or stop.

Runs before any record is produced (the DataSource's writer()/streamWriter(), write_upsert,
serialize). The candidate key is exactly what the key codec writes: the Avro schema of an
avro/avro-confluent key, or the JSON Schema of the key row for json/csv/raw. The topic facts
(partition count, cleanup.policy, the schema ids the keys carry) come from the same brokers
and security settings the producer uses. A breaking verdict raises `GuardBlockedError` with
the rendered report, unless `guard.allow-breaking=true`, which logs the report at WARNING.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from keyguard.formats.codec import Codec, format_factory
from keyguard.formats.errors import EXIT_BREAKING, BrokerUnavailableError, KeyguardError
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry import EmptyRegistry, Registry
from keyguard.formats.registry.registration import registers, registry_of
from keyguard.formats.registry.settings import registry_options_of, resolve_registry
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.secrets import redact, redact_url, redacting_logger
from keyguard.guard.check import check
from keyguard.guard.plan import TopicPlan
from keyguard.guard.render import render
from keyguard.guard.report import Report, Verdict
from keyguard.guard.selection import RuleSelection
from keyguard.guard.topic import (
    KafkaTopicInspector,
    StaticTopicInspector,
    TopicFacts,
    TopicInspector,
)
from keyguard.sparkio.options import (
    ALLOW_BREAKING,
    GUARD_IGNORE,
    GUARD_REGISTRY,
    GUARD_RULES_OF,
    REQUIRE_SUBJECT,
    SCAN_LIMIT,
    ConnectorOptions,
)

_LOG = redacting_logger("keyguard.sparkio")


class GuardBlockedError(KeyguardError):
    """The guard found a change that would orphan records in the topic; nothing was written."""

    exit_code = EXIT_BREAKING

    def __init__(self, message: str, *, report: Report, text: str) -> None:
        super().__init__(message, hint="fix the schema, or migrate deliberately with "
                                       "guard.allow-breaking=true")
        self.report = report
        self.text = text

    def __str__(self) -> str:
        return f"{self.message}\n{self.text}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled from Spark's planner process (writer()) back to write_upsert's caller.
        return (_blocked, (self.message, self.report, self.text))


def _blocked(message: str, report: Report, text: str) -> GuardBlockedError:
    return GuardBlockedError(message, report=report, text=text)


class TopicMissingError(KeyguardError):
    """The topic to write does not exist: an upsert topic is created on purpose, compacted."""


@dataclass(frozen=True)
class GuardOutcome:
    report: Report
    facts: TopicFacts
    #: The log record of the verdict (level, message), as logged where the guard ran.
    level: int = logging.INFO
    message: str = ""

    @property
    def partitions(self) -> int:
        return self.facts.partitions


def candidate(codec_format: str, codec: Codec, row_type: object, role: str) -> SchemaText:
    """The schema a codec writes (`Codec.written_schema`), named for the Spark DataFrame."""
    return codec.written_schema(f"the Spark DataFrame's {role} ({codec_format})")


def topic_check(plan: UpsertPlan, partitions: int | None) -> TopicPlan:
    """The guard's plan of this write (`TopicPlan.of_upsert`)."""
    return TopicPlan.of_upsert(plan, partitions)


def guard_registry(plan: UpsertPlan, conn: ConnectorOptions) -> tuple[Registry, bool]:
    """The registry holding the registered schemas, and whether guard.registry named it."""

    explicit = conn[GUARD_REGISTRY]
    if explicit:  # the one settings path; connection options of a format naming this URL
        _, opts, _ = registry_options_of(
            (f"{role}.{fmt}.", options) for role, fmt, options in
            (("key", plan.key_format, plan.key_options),
             ("value", plan.value_format, plan.value_options))
            if format_factory(fmt).uses_registry
            and str(options.get("url") or "").strip() == explicit)
        registry = resolve_registry(explicit_url=explicit, explicit_options=opts).open()
        getattr(registry, "create", lambda: None)()  # registered into before the first task
        return registry, True
    for codec in (plan.key_codec, plan.value_codec):
        given = registry_of(codec)
        if format_factory(codec.format_name).uses_registry and given is not None:
            if registers(codec):
                getattr(given, "create", lambda: None)()
            return given, False
    # Nothing registered anywhere: an empty scope, so the key counts as a first version.
    return EmptyRegistry(), False


def inspector_for(conn: ConnectorOptions) -> KafkaTopicInspector:
    props = {k: v for k, v in conn.properties.items() if k != "bootstrap.servers"}
    return KafkaTopicInspector(str(conn.bootstrap), props)


def run_guard(plan: UpsertPlan, conn: ConnectorOptions, *,
              inspector: TopicInspector | None = None,
              registry: Registry | None = None) -> GuardOutcome:
    """Judge the write; raise GuardBlockedError on a breaking verdict unless overridden."""
    inspector = inspector or inspector_for(conn)
    try:  # also the driver's probe of the brokers, before any task starts
        facts = inspector.facts(plan.topic, scan_limit=conn[SCAN_LIMIT],
                                scan_schema_ids=conn[SCAN_LIMIT] > 0)
    except BrokerUnavailableError as exc:
        raise BrokerUnavailableError(
            f"topic {plan.topic}: {exc.message}; nothing was written",
            hint="check properties.bootstrap.servers (reachable from the driver and from "
                 "every executor) and the security settings (properties.security.protocol, "
                 "properties.sasl.*, properties.ssl.*)") from None
    if facts is None:
        where = redact_url(str(conn.bootstrap))
        raise TopicMissingError(
            f"topic {plan.topic} does not exist at {where}",
            hint="create it first, with cleanup.policy=compact and the partition count it "
                 "keeps for life (keys are placed by murmur2 modulo that count)")
    if registry is None:
        registry, _explicit = guard_registry(plan, conn)
    spec = topic_check(plan, facts.partitions).replace(rules_of=conn[GUARD_RULES_OF])
    report = check(spec, registry=registry, inspector=StaticTopicInspector({plan.topic: facts}),
                   scan_limit=conn[SCAN_LIMIT],
                   require_subject=conn[REQUIRE_SUBJECT])
    # Ignored rules' findings neither block nor warn; the report says what they hid.
    report = RuleSelection.of(ignore=conn[GUARD_IGNORE], source="guard.ignore").apply(report)
    text = redact(render(report, "text"), conn.secrets())
    if report.verdict is Verdict.BREAKING:
        n = len(report.breaking)
        if not conn[ALLOW_BREAKING]:
            raise GuardBlockedError(
                f"keyguard blocked the write to topic {plan.topic}: {n} breaking "
                f"finding{'s' if n > 1 else ''}; nothing was written", report=report, text=text)
        level, message = logging.WARNING, (
            f"guard.allow-breaking=true: writing topic {plan.topic} DESPITE {n} breaking "
            f"finding{'s' if n > 1 else ''}; records written before may be orphaned.\n{text}")
    elif report.verdict is Verdict.WARN:
        level = logging.WARNING
        message = f"keyguard: topic {plan.topic} passes with warnings\n{text}"
    else:
        level, message = logging.INFO, f"keyguard: topic {plan.topic} is safe to write\n{text}"
    _LOG.log(level, "%s", message)
    return GuardOutcome(report, facts, level, message)


def register_written_schemas(plan: UpsertPlan, conn: ConnectorOptions) -> None:
    """The registration step of guard.registry, on the driver after the guard passed and
    before the first task: a json/csv/raw key's (and value's) JSON Schema goes into
    guard.registry, so the next write of the topic is checked against it.

    Formats that register their own schema (avro-confluent) are registered in the same step,
    when their id is resolved (`keyguard.formats.registry.registration`); nothing else remembers
    what the other formats' keys looked like. A failure to register is logged, never raised: it
    only means the next write has no previous key to be checked against.
    """
    if not conn[GUARD_REGISTRY] or format_factory(plan.key_format).uses_registry:
        return
    registry, _ = guard_registry(plan, conn)
    spec = TopicPlan.of_upsert(plan)
    for role, schema, fmt in (("key", spec.candidate_key, plan.key_format),
                              ("value", spec.candidate_value, plan.value_format)):
        if schema is None or format_factory(fmt).uses_registry:
            continue
        subject = spec.subject(role, schema)
        try:
            registry.register(subject, schema.text, schema.schema_type)
        except KeyguardError as exc:
            _LOG.warning("keyguard: could not register the %s schema of topic %s under %s: %s",
                         role, plan.topic, subject, exc.message)

