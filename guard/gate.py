"""The CI schema gate: the file registry of a pull request against the same registry at a git ref.

A team keeps its schemas in the repository (see `schemas/README.md`). A pull request that adds
`v2.avsc` to a key subject is a key schema change; the gate compares the working tree's newest
version of each subject with the registry as committed at the base ref, with no registry
server and no broker. Topics come from a config file, or from the `<topic>-key` /
`<topic>-value` subjects found in the working tree.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from keyguard.formats.codec import default_format
from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.registry import Registry
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schema_identity import canonical_form
from keyguard.formats.schemafile import SchemaText, version_text
from keyguard.guard.check import check
from keyguard.guard.config import TopicEntry
from keyguard.guard.options import RULES_OF
from keyguard.guard.plan import TopicPlan
from keyguard.guard.report import Report


def registry_at_ref(directory: str | Path, ref: str) -> FileRegistry:
    """The file registry in `directory` as committed at `ref` in its git repository."""
    d = Path(directory).resolve()
    try:
        top = subprocess.run(
            ["git", "-C", str(d), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise InvalidOptionError(
            f"--against git:{ref}: {d} is not inside a git repository",
            hint="run the gate in a checkout, with the base ref fetched",
        ) from None
    subdir = d.relative_to(Path(top).resolve()).as_posix() or "."
    return FileRegistry.at_git_ref(top, ref, subdir)


def discover_topics(registry: Registry) -> list[TopicEntry]:
    """One entry per topic with a `<topic>-key` subject (TopicNameStrategy)."""
    subjects = set(registry.subjects())
    out = []
    for s in sorted(subjects):
        if not s.endswith("-key"):
            continue
        topic = s[: -len("-key")]
        key_type = registry.get_version(s).schema_type
        value_type = (registry.get_version(f"{topic}-value").schema_type
                      if f"{topic}-value" in subjects else None)
        out.append(TopicEntry(
            name=topic,
            # The formats answer which one registers a schema of that type.
            key_format=default_format(key_type),
            value_format=default_format(value_type) if value_type else None,
        ))
    return out


def _changed_latest(old: Registry, new: Registry, subject: str) -> SchemaText | None:
    """The working tree's newest version of `subject` when it differs from the base's."""
    if not new.versions(subject):
        return None
    latest = new.get_version(subject)
    text = version_text(new, latest).with_origin(f"{new.name} {subject} v{latest.version}")
    if old.versions(subject):
        base = old.get_version(subject)
        if base.schema_type == latest.schema_type and canonical_form(
            base.schema, base.schema_type, references=base.references
        ) == canonical_form(latest.schema, latest.schema_type, references=latest.references):
            return None
    return text


def gate(
    old: Registry, new: Registry, entries: Sequence[TopicEntry] | None = None, *,
    rules_of: str = RULES_OF.default_value,
) -> Report:
    """Every topic whose key or value subject changed between `old` and `new`, judged (values
    by `rules_of`'s compatibility rules where the registries differ)."""
    topics: Iterable[TopicEntry] = entries if entries else discover_topics(new)
    report = Report()
    changed_any = False
    for e in topics:
        spec = _with_candidates(TopicPlan.of_entry(e).replace(rules_of=rules_of), old, new)
        if spec.candidate_key is None and spec.candidate_value is None:
            report = report.merged(Report.of((), checked=[f"{e.name}: unchanged"]))
            continue
        changed_any = True
        report = report.merged(check(spec, registry=old))
    if not changed_any:
        report = report.merged(Report.of((), notes=[f"no schema changed against {old.name}"]))
    return report


def candidate_files(directory: str | Path, registry: Registry, report: Report) -> dict[str, str]:
    """subject -> the working tree's file of its newest version, for annotations and SARIF."""
    from urllib.parse import quote

    out: dict[str, str] = {}
    for subject in {f.subject for f in report.findings if f.subject}:
        versions = registry.versions(subject)
        if not versions:
            continue
        folder = Path(directory) / "subjects" / quote(subject, safe="")
        for path in sorted(folder.glob(f"v{versions[-1]}.*")):
            out[subject] = str(path)
    return out


def _with_candidates(spec: TopicPlan, old: Registry, new: Registry) -> TopicPlan:
    key = _changed_latest(old, new, spec.subject("key", None))
    value = (_changed_latest(old, new, spec.subject("value", None))
             if spec.value_format else None)
    return spec.replace(candidate_key=key, candidate_value=value)
