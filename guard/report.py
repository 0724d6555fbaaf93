"""What the guard says: Findings, each naming its Rule, gathered into a Report with a Verdict.

Pure data. The analysis produces it, the CLI renders it (text, json, junit, sarif, github),
and the Spark writer raises with it. Nothing here may hold a credential.
"""

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, NamedTuple


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


class Rule(NamedTuple):
    """A check with a stable ID, like a ruff rule or a buf breaking-change rule."""

    id: str
    name: str
    category: Category
    severity: Severity
    summary: str
    #: Why records are orphaned (or why it is safe): the paragraph `keyguard rules` prints.
    why: str
    #: A minimal example: the old and the new schema or setting, in a line or two each.
    example_old: str = ""
    example_new: str = ""
    #: The key families the rule judges (a format's `key_family`: avro, json, csv, raw,
    #: protobuf), or `ANY_FAMILY`; empty: the rule is about no key format in particular. The
    #: formats `keyguard rules` and SARIF list are derived from these and the format catalogue
    #: (`keyguard.guard.rules_catalogue.formats_of`), so a new format is listed where it belongs.
    families: tuple[str, ...] = ()
    #: What the key's frame must carry besides: the rule only applies to those formats.
    framing: Framing = Framing.ANY
    #: The checks that emit it: dotted names of functions under guard/
    #: (`keyguard.guard.keys.text._atomic`).
    checks: tuple[str, ...] = ()


class Witness(NamedTuple):
    """A concrete key that proves a finding: its bytes under the old and the new schema."""

    key: dict[str, Any]
    old_bytes: bytes | None
    new_bytes: bytes | None
    #: Why new_bytes is None: the new schema cannot encode this key at all.
    new_error: str | None = None
    old_partition: int | None = None
    new_partition: int | None = None
    #: The record headers each side's framing writes with the key (a header framing's schema
    #: id): shown where the framing is the finding.
    old_headers: tuple[tuple[str, bytes], ...] = ()
    new_headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def differs(self) -> bool:
        return (
            self.new_bytes is None
            or self.old_bytes != self.new_bytes
            or self.old_partition != self.new_partition
        )


class Finding(NamedTuple):
    """What one rule found at one place, with the key that proves it when there is one."""

    rule: Rule
    #: Where in the schema (`user_region`, `address.zip`, `$` for the whole key, or an option).
    path: str
    message: str
    witness: Witness | None = None
    #: The topic and subject the finding is about, when there are several.
    topic: str | None = None
    subject: str | None = None
    severity: Severity | None = None
    #: The durable way out of what was found, when there is one beyond this change's migration.
    advice: str | None = None

    @property
    def effective_severity(self) -> Severity:
        return self.severity or self.rule.severity


class Ignored(NamedTuple):
    """Rules the user ignored (or left out of a selection), and the findings they hid.

    Hidden findings do not count toward the verdict or the exit code; every renderer still says
    what was ignored and how many findings each rule hid, so nothing is dropped silently.
    """

    #: What the user wrote, canonical: a rule ID (`KG701`), a category (`key-bytes`), or, for
    #: rules outside a selection, `not selected (KG1xx, key-placement)`.
    selector: str
    #: Where the user said it: `--ignore`, `config file`, `topic orders (config file)`, ...
    source: str
    #: The rules it covers (one for a rule ID, every rule of a category).
    rules: tuple[Rule, ...] = ()
    #: The findings it hid, in the order the analysis found them.
    findings: tuple[Finding, ...] = ()
    #: The topic it applies to; None: every topic.
    topic: str | None = None
    #: Why the user accepted these findings (a suppression: `keyguard.guard.suppress`).
    reason: str | None = None
    #: The schema path it is limited to (a field, a column); None: anywhere.
    path: str | None = None
    #: Written in the schema file itself (True) or in the config file / command line.
    in_source: bool = False

    def hidden(self) -> dict[str, int]:
        """Findings hidden per rule ID: every rule named directly, and any other that hid one."""
        out = {r.id: 0 for r in self.rules} if len(self.rules) == 1 else {}
        for f in self.findings:
            out[f.rule.id] = out.get(f.rule.id, 0) + 1
        return out


class Section(NamedTuple):
    """Numbers a command adds to its report beyond findings (`keyguard audit`'s): `lines` for
    the text report, `data` (JSON values only) for the json and sarif reports under `name`."""

    name: str
    lines: tuple[str, ...]
    data: Mapping[str, Any]


class Report(NamedTuple):
    """Everything found for one check (one topic, or several from a config file)."""

    findings: tuple[Finding, ...] = ()
    #: What was compared, for the header of a rendered report (no credentials).
    checked: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: Rules ignored by the user and the findings they hid (not in `findings`, never counted).
    ignored: tuple[Ignored, ...] = ()
    #: Extra sections (the audit's numbers); renderers show them after the findings.
    sections: tuple[Section, ...] = ()

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

    def merged(self, other: "Report") -> "Report":
        return Report(self.findings + other.findings, self.checked + other.checked,
                      self.notes + other.notes, self.ignored + other.ignored,
                      self.sections + other.sections)

    @staticmethod
    def of(findings: Iterable[Finding], checked: Iterable[str] = (),
           notes: Iterable[str] = ()) -> "Report":
        return Report(tuple(findings), tuple(checked), tuple(notes))
