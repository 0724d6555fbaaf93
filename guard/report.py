"""What the guard says: Findings, each naming its Rule, gathered into a Report with a Verdict.

Pure data. The analysis produces it, the CLI renders it (text, json, junit, sarif, github),
and the Spark writer raises with it. Nothing here may hold a credential.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Final

from keyguard.formats.immutable import Value


class Severity(str, Enum):
    """BREAKING blocks a deploy; WARNING is shown and passes; INFO explains a safe change."""

    BREAKING = "breaking"
    WARNING = "warning"
    INFO = "info"


class Verdict(str, Enum):
    SAFE = "safe"
    WARN = "warn"
    BREAKING = "breaking"


class Category(str, Enum):
    KEY_BYTES = "key-bytes"
    KEY_PLACEMENT = "key-placement"
    TOPIC = "topic"
    VALUE_COMPATIBILITY = "value-compatibility"
    #: What `keyguard audit` finds in a topic's bytes (guard/audit).
    AUDIT = "audit"


#: A rule's families when it judges a key of any format (placement, the witness search).
ANY_FAMILY: tuple[str, ...] = ("*",)


class Framing(str, Enum):
    """What a key's frame must carry for a rule to apply (`keyguard.formats.framing.Frame`)."""

    ANY = "any"
    #: Confluent's wire format: the schema id before the body (`Frame.carries_schema_id`).
    SCHEMA_ID = "schema-id"
    #: Its Protobuf variant: the message index after the id (`Frame.indexed`).
    MESSAGE_INDEX = "message-index"
    #: A framing the format's `framing` option can choose puts the id in a record header
    #: (`Frame.id_in_header`).
    ID_IN_HEADER = "id-in-header"


class Rule(Value):
    """A check with a stable ID, like a ruff rule or a buf breaking-change rule."""

    __slots__ = ("category", "checks", "example_new", "example_old", "families", "framing", "id",
                 "name", "severity", "summary", "why")
    FIELDS = ("id", "name", "category", "severity", "summary", "why", "example_old", "example_new",
              "families", "framing", "checks")
    id: Final[str]
    name: Final[str]
    category: Final[Category]
    severity: Final[Severity]
    summary: Final[str]
    #: Why records are orphaned (or why it is safe): the paragraph `keyguard rules` prints.
    why: Final[str]
    #: A minimal example: the old and the new schema or setting, in a line or two each.
    example_old: Final[str]
    example_new: Final[str]
    #: The key families the rule judges (a format's `key_family`: avro, json, csv, raw,
    #: protobuf), or `ANY_FAMILY`; empty: the rule is about no key format in particular. The
    #: formats `keyguard rules` and SARIF list are derived from these and the format catalogue
    #: (`keyguard.guard.rules_catalogue.formats_of`), so a new format is listed where it belongs.
    families: Final[tuple[str, ...]]
    #: What the key's frame must carry besides: the rule only applies to those formats.
    framing: Final[Framing]
    #: The checks that emit it: dotted names of functions under guard/
    #: (`keyguard.guard.keys.text._atomic`).
    checks: Final[tuple[str, ...]]

    def __init__(self, id: str, name: str, category: Category, severity: Severity, summary: str,
                 why: str, example_old: str = "", example_new: str = "",
                 families: tuple[str, ...] = (), framing: Framing = Framing.ANY,
                 checks: tuple[str, ...] = ()) -> None:
        self.id = id
        self.name = name
        self.category = category
        self.severity = severity
        self.summary = summary
        self.why = why
        self.example_old = example_old
        self.example_new = example_new
        self.families = families
        self.framing = framing
        self.checks = checks


class Witness(Value):
    """A concrete key that proves a finding: its bytes under the old and the new schema."""

    __slots__ = ("key", "new_bytes", "new_error", "new_headers", "new_partition", "old_bytes",
                 "old_headers", "old_partition")
    FIELDS = ("key", "old_bytes", "new_bytes", "new_error", "old_partition", "new_partition",
              "old_headers", "new_headers")
    key: Final[dict[str, Any]]
    old_bytes: Final[bytes | None]
    new_bytes: Final[bytes | None]
    #: Why new_bytes is None: the new schema cannot encode this key at all.
    new_error: Final[str | None]
    old_partition: Final[int | None]
    new_partition: Final[int | None]
    #: The record headers each side's framing writes with the key (a header framing's schema
    #: id): shown where the framing is the finding.
    old_headers: Final[tuple[tuple[str, bytes], ...]]
    new_headers: Final[tuple[tuple[str, bytes], ...]]

    def __init__(self, key: dict[str, Any], old_bytes: bytes | None, new_bytes: bytes | None,
                 new_error: str | None = None, old_partition: int | None = None,
                 new_partition: int | None = None,
                 old_headers: tuple[tuple[str, bytes], ...] = (),
                 new_headers: tuple[tuple[str, bytes], ...] = ()) -> None:
        self.key = key
        self.old_bytes = old_bytes
        self.new_bytes = new_bytes
        self.new_error = new_error
        self.old_partition = old_partition
        self.new_partition = new_partition
        self.old_headers = old_headers
        self.new_headers = new_headers

    @property
    def differs(self) -> bool:
        return (
            self.new_bytes is None
            or self.old_bytes != self.new_bytes
            or self.old_partition != self.new_partition
        )


class Finding(Value):
    """What one rule found at one place, with the key that proves it when there is one."""

    __slots__ = ("advice", "message", "path", "rule", "severity", "subject", "topic", "witness")
    FIELDS = ("rule", "path", "message", "witness", "topic", "subject", "severity", "advice")
    rule: Final[Rule]
    #: Where in the schema (`user_region`, `address.zip`, `$` for the whole key, or an option).
    path: Final[str]
    message: Final[str]
    witness: Final[Witness | None]
    #: The topic and subject the finding is about, when there are several.
    topic: Final[str | None]
    subject: Final[str | None]
    severity: Final[Severity | None]
    #: The durable way out of what was found, when there is one beyond this change's migration.
    advice: Final[str | None]

    def __init__(self, rule: Rule, path: str, message: str, witness: Witness | None = None,
                 topic: str | None = None, subject: str | None = None,
                 severity: Severity | None = None, advice: str | None = None) -> None:
        self.rule = rule
        self.path = path
        self.message = message
        self.witness = witness
        self.topic = topic
        self.subject = subject
        self.severity = severity
        self.advice = advice

    @property
    def effective_severity(self) -> Severity:
        return self.severity or self.rule.severity


class Ignored(Value):
    """Rules the user ignored (or left out of a selection), and the findings they hid.

    Hidden findings do not count toward the verdict or the exit code; every renderer still says
    what was ignored and how many findings each rule hid, so nothing is dropped silently.
    """

    __slots__ = ("findings", "in_source", "path", "reason", "rules", "selector", "source", "topic")
    FIELDS = ("selector", "source", "rules", "findings", "topic", "reason", "path", "in_source")
    #: What the user wrote, canonical: a rule ID (`KG701`), a category (`key-bytes`), or, for
    #: rules outside a selection, `not selected (KG1xx, key-placement)`.
    selector: Final[str]
    #: Where the user said it: `--ignore`, `config file`, `topic orders (config file)`, ...
    source: Final[str]
    #: The rules it covers (one for a rule ID, every rule of a category).
    rules: Final[tuple[Rule, ...]]
    #: The findings it hid, in the order the analysis found them.
    findings: Final[tuple[Finding, ...]]
    #: The topic it applies to; None: every topic.
    topic: Final[str | None]
    #: Why the user accepted these findings (a suppression: `keyguard.guard.suppress`).
    reason: Final[str | None]
    #: The schema path it is limited to (a field, a column); None: anywhere.
    path: Final[str | None]
    #: Written in the schema file itself (True) or in the config file / command line.
    in_source: Final[bool]

    def __init__(self, selector: str, source: str, rules: tuple[Rule, ...] = (),
                 findings: tuple[Finding, ...] = (), topic: str | None = None,
                 reason: str | None = None, path: str | None = None,
                 in_source: bool = False) -> None:
        self.selector = selector
        self.source = source
        self.rules = rules
        self.findings = findings
        self.topic = topic
        self.reason = reason
        self.path = path
        self.in_source = in_source

    def hidden(self) -> dict[str, int]:
        """Findings hidden per rule ID: every rule named directly, and any other that hid one."""
        out = {r.id: 0 for r in self.rules} if len(self.rules) == 1 else {}
        for f in self.findings:
            out[f.rule.id] = out.get(f.rule.id, 0) + 1
        return out


class Section(Value):
    """Numbers a command adds to its report beyond findings (`keyguard audit`'s): `lines` for
    the text report, `data` (JSON values only) for the json and sarif reports under `name`."""

    __slots__ = ("data", "lines", "name")
    FIELDS = ("name", "lines", "data")
    name: Final[str]
    lines: Final[tuple[str, ...]]
    data: Final[Mapping[str, Any]]

    def __init__(self, name: str, lines: tuple[str, ...], data: Mapping[str, Any]) -> None:
        self.name = name
        self.lines = lines
        self.data = data


class Report(Value):
    """Everything found for one check (one topic, or several from a config file)."""

    __slots__ = ("checked", "findings", "ignored", "notes", "sections")
    FIELDS = ("findings", "checked", "notes", "ignored", "sections")
    findings: Final[tuple[Finding, ...]]
    #: What was compared, for the header of a rendered report (no credentials).
    checked: Final[tuple[str, ...]]
    notes: Final[tuple[str, ...]]
    #: Rules ignored by the user and the findings they hid (not in `findings`, never counted).
    ignored: Final[tuple[Ignored, ...]]
    #: Extra sections (the audit's numbers); renderers show them after the findings.
    sections: Final[tuple[Section, ...]]

    def __init__(self, findings: tuple[Finding, ...] = (), checked: tuple[str, ...] = (),
                 notes: tuple[str, ...] = (), ignored: tuple[Ignored, ...] = (),
                 sections: tuple[Section, ...] = ()) -> None:
        self.findings = findings
        self.checked = checked
        self.notes = notes
        self.ignored = ignored
        self.sections = sections

    @property
    def suppressed(self) -> tuple[Finding, ...]:
        """The findings that ignored rules hid."""
        return tuple(f for i in self.ignored for f in i.findings)

    @property
    def verdict(self) -> Verdict:
        sev = {f.effective_severity for f in self.findings}
        if Severity.BREAKING in sev:
            return Verdict.BREAKING
        if Severity.WARNING in sev:
            return Verdict.WARN
        return Verdict.SAFE

    @property
    def breaking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.effective_severity is Severity.BREAKING)

    def merged(self, other: Report) -> Report:
        return Report(self.findings + other.findings, self.checked + other.checked,
                      self.notes + other.notes, self.ignored + other.ignored,
                      self.sections + other.sections)

    @staticmethod
    def of(findings: Iterable[Finding], checked: Iterable[str] = (),
           notes: Iterable[str] = ()) -> Report:
        return Report(tuple(findings), tuple(checked), tuple(notes))
