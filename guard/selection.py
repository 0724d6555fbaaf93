"""Selecting and ignoring rules, by ID or category, like ruff's `--select` and `--ignore`.

Users name rules on the command line (`--ignore KG701 --ignore key-bytes`, repeatable and
comma-separated, `--select`), in the config file (`ignore = [...]`, global and per topic) and
in the Spark option `guard.ignore`. Each name is a rule ID (`KG701`), a retired ID that
`keyguard.guard.rules.ALIASES` maps to its successor, a rule name (`topic-not-compacted`) or a
category (`key-bytes`); anything else is rejected (exit 2) with the names that look alike.

`RuleSelection.apply` is pure: findings of ignored rules (and, with a selection, of the rules
outside it) leave `Report.findings`, so they count toward neither the verdict nor the exit code,
and land in `Report.ignored`, which every renderer shows. A selection also carries the
suppressions of the config file and the Flink DDLs (`Suppression`: one rule accepted with a
reason, perhaps for one field, read by `keyguard.guard.suppress`); they apply first, and
`suppress` applies them alone (the guard's check, with those of the candidate schemas).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.report import Category, Finding, Ignored, Report, Rule
from keyguard.guard.rules import ALIASES, ALL_RULES

CATEGORIES: dict[str, Category] = {c.value: c for c in Category}


@dataclass(frozen=True)
class Selector:
    """What one name a user wrote stands for."""

    #: Canonical: the rule's current ID, or the category.
    token: str
    rules: tuple[Rule, ...]
    #: The retired ID the user wrote, when it was one (`ALIASES`).
    alias: str | None = None

    @property
    def is_category(self) -> bool:
        return self.token in CATEGORIES

    def names(self, r: Rule) -> bool:
        """Whether `r` is one of its rules (by ID: a finding names its rule by ID)."""
        return any(r.id == mine.id for mine in self.rules)


def selector(name: str, *, where: str) -> Selector:
    """The rules a rule ID, retired ID, rule name or category names; exit 2 if none."""
    raw = name.strip()
    up, low = raw.upper(), raw.lower()
    if up in ALL_RULES:
        return Selector(up, (ALL_RULES[up],))
    if up in ALIASES:
        return Selector(ALIASES[up], (ALL_RULES[ALIASES[up]],), alias=up)
    for r in ALL_RULES.values():
        if r.name == low:
            return Selector(r.id, (r,))
    if low in CATEGORIES:
        cat = CATEGORIES[low]
        return Selector(low, tuple(r for r in ALL_RULES.values() if r.category is cat))
    near = _near(up, low)
    raise InvalidOptionError(
        f"{where}: unknown rule or category {raw!r}",
        hint=(f"did you mean {' or '.join(near)}? " if near else "")
        + "`keyguard rules` lists the rule IDs; the categories are "
        + ", ".join(CATEGORIES))


def _near(up: str, low: str) -> list[str]:
    """The known names a typo most likely meant: an ID one character off, else difflib's."""
    ids = [*ALL_RULES, *ALIASES]
    one_off = [i for i in ids
               if len(i) == len(up) and sum(a != b for a, b in zip(i, up, strict=True)) == 1]
    if one_off:
        return one_off[:3]
    known = [*ids, *(r.name for r in ALL_RULES.values()), *CATEGORIES]
    return difflib.get_close_matches(up if up.startswith("KG") else low, known, n=3,
                                     cutoff=0.75)


def split_names(values: Iterable[str] | str | None) -> list[str]:
    """`["KG701,key-bytes", "KG101"]` or `"KG701, KG101"` -> the names, commas and blanks gone."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [n.strip() for v in values for n in str(v).split(",") if n.strip()]


def selectors(values: Iterable[str] | str | None, *, where: str) -> tuple[Selector, ...]:
    """Every name in `values` resolved (duplicates once, in the order given)."""
    out: dict[str, Selector] = {}
    for name in split_names(values):
        s = selector(name, where=where)
        out.setdefault(s.token, s)
    return tuple(out.values())


@dataclass(frozen=True)
class IgnoreEntry:
    """One ignored rule or category, where the user said it, and the topic it is for."""

    selector: Selector
    source: str
    #: None: every topic (and findings that name none).
    topic: str | None = None

    def covers(self, f: Finding) -> bool:
        return (self.topic is None or self.topic == f.topic) and self.selector.names(f.rule)


@dataclass(frozen=True)
class Suppression:
    """One accepted rule (or category), where it was written, why, and what it covers."""

    selector: Selector
    reason: str
    #: Where it was written: `orders-key.avsc line 7`, `keyguard.toml: ignore[1]`.
    source: str
    #: The schema paths it covers, each with what is nested in it; empty: every path.
    paths: tuple[str, ...] = ()
    #: The topic and the subject it is limited to; None: any.
    topic: str | None = None
    subject: str | None = None
    #: Written in the schema file (SARIF's `inSource`), not in the config file (`external`).
    in_source: bool = True

    def covers(self, f: Finding) -> bool:
        return ((self.topic is None or f.topic == self.topic)
                and (self.subject is None or f.subject == self.subject)
                and (not self.paths or any(_within(f.path, p) for p in self.paths))
                and self.selector.names(f.rule))

    def ignored(self, findings: Sequence[Finding]) -> Ignored:
        return Ignored(self.selector.token, self.source, self.selector.rules, tuple(findings),
                       self.topic, reason=self.reason,
                       path=self.paths[0] if self.paths else None, in_source=self.in_source)

    def unused(self) -> str:
        """The note of a suppression that covered no finding."""
        what = self.selector.alias or self.selector.token
        if self.selector.is_category:
            what = f"category {what}"
        if self.paths:
            what += f" at {self.paths[0]}"
        if self.topic is not None:
            what += f" for topic {self.topic}"
        return (f"unused suppression: {what} ({self.source}) matched no finding; remove it, "
                "or check its rule and place")


def _within(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((f"{prefix}.", f"{prefix}["))


def suppress(report: Report, suppressions: Sequence[Suppression]) -> Report:
    """The report with each covered finding moved to `ignored` (the first suppression covering
    it takes it), and a note for each suppression that covered none."""
    if not suppressions:
        return report
    kept: list[Finding] = []
    hidden: dict[int, list[Finding]] = {}
    for f in report.findings:
        i = next((i for i, s in enumerate(suppressions) if s.covers(f)), None)
        if i is None:
            kept.append(f)
        else:
            hidden.setdefault(i, []).append(f)
    used = tuple(s.ignored(hidden[i]) for i, s in enumerate(suppressions) if i in hidden)
    unused = tuple(s.unused() for i, s in enumerate(suppressions) if i not in hidden)
    return report.replace(findings=tuple(kept), ignored=report.ignored + used,
                          notes=report.notes + unused)


@dataclass(frozen=True)
class RuleSelection:
    """Which rules count: `select` narrows to some (empty: all), `ignore` removes (it wins)."""

    ignore: tuple[IgnoreEntry, ...] = ()
    select: tuple[Selector, ...] = ()
    #: Where the selection was given (`--select`).
    select_source: str = "--select"
    #: Rules accepted with a reason (config file tables, Flink DDL comments); applied first.
    suppressions: tuple[Suppression, ...] = ()

    @staticmethod
    def of(*, ignore: Iterable[str] | str | None = None,
           select: Iterable[str] | str | None = None, source: str = "--ignore",
           select_source: str = "--select", topic: str | None = None) -> RuleSelection:
        """Parse the names (exit 2 on an unknown one, naming `source`)."""
        where = source if topic is None else f"{source}: topic {topic}"
        return RuleSelection(
            tuple(IgnoreEntry(s, source, topic) for s in selectors(ignore, where=where)),
            selectors(select, where=select_source), select_source)

    def __bool__(self) -> bool:
        return bool(self.ignore or self.select or self.suppressions)

    def plus(self, other: RuleSelection) -> RuleSelection:
        """Both selections: every ignore of either (the first naming a rule for a topic wins),
        the union of the selects."""
        seen = {(e.selector.token, e.topic) for e in self.ignore}
        extra = tuple(e for e in other.ignore if (e.selector.token, e.topic) not in seen)
        tokens = {s.token for s in self.select}
        select = self.select + tuple(s for s in other.select if s.token not in tokens)
        return RuleSelection(self.ignore + extra, select,
                             self.select_source if self.select else other.select_source,
                             self.suppressions + other.suppressions)

    def accepting(self, suppressions: Iterable[Suppression]) -> RuleSelection:
        """The selection with these suppressions too."""
        return replace(self, suppressions=self.suppressions + tuple(suppressions))

    def selected(self, r: Rule) -> bool:
        return not self.select or any(s.names(r) for s in self.select)

    def apply(self, report: Report) -> Report:
        """The report with the findings of ignored (or unselected) rules moved to `ignored`."""
        if not self:
            return report
        report = suppress(report, self.suppressions)
        kept: list[Finding] = []
        hidden: dict[int, list[Finding]] = {}
        unselected: list[Finding] = []
        for f in report.findings:
            entry = next((i for i, e in enumerate(self.ignore) if e.covers(f)), None)
            if entry is not None:
                hidden.setdefault(entry, []).append(f)
            elif not self.selected(f.rule):
                unselected.append(f)
            else:
                kept.append(f)
        ignored = [Ignored(e.selector.token, e.source, e.selector.rules,
                           tuple(hidden.get(i, ())), e.topic)
                   for i, e in enumerate(self.ignore)]
        if self.select:
            names = ", ".join(s.token for s in self.select)
            outside = tuple(r for r in ALL_RULES.values() if not self.selected(r))
            ignored.append(Ignored(f"not selected ({names})", self.select_source, outside,
                                   tuple(unselected)))
        return report.replace(findings=tuple(kept), ignored=report.ignored + tuple(ignored))

