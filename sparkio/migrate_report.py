"""What a `keyguard migrate` run reports: `MigrationReport` (found, planned, written,
verified), its text and JSON forms and its exit code, the same for both forms of the run
(`keyguard.sparkio.migrate_topic`, `keyguard.sparkio.migrate_spark`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from keyguard.formats.errors import EXIT_BREAKING
from keyguard.formats.secrets import redact
from keyguard.sparkio.migrate_plan import MigrationPlan, Shown, Verification


@dataclass
class MigrationReport:
    """What a run found, planned, wrote and verified; rendered by `render_text`/`as_json`."""

    topic: str
    target: str
    dry_run: bool
    records_read: int = 0
    null_keys: int = 0
    plan: MigrationPlan | None = None
    rewrites_acknowledged: int = 0
    tombstones_acknowledged: int = 0
    verification: Verification | None = None
    state_path: str | None = None
    #: The phase the previous run reached, from the state file.
    resumed_from: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def wrote_nothing(self) -> bool:
        return not (self.rewrites_acknowledged or self.tombstones_acknowledged)


def exit_code(report: MigrationReport) -> int:
    """0, or 1 when the verification found a row still under two or under old encodings."""
    v = report.verification
    return EXIT_BREAKING if v is not None and not v.clean else 0


def as_json(report: MigrationReport) -> dict[str, Any]:
    plan, v = report.plan, report.verification
    out: dict[str, Any] = {
        "topic": report.topic, "target": report.target, "dry_run": report.dry_run,
        "records_read": report.records_read, "null_keys": report.null_keys,
        "state": report.state_path, "resumed_from": report.resumed_from,
        "notes": [redact(n) for n in report.notes],
        "written": {"rewrites": report.rewrites_acknowledged,
                    "tombstones": report.tombstones_acknowledged},
    }
    if plan is not None:
        out["plan"] = {
            "live_keys": plan.live_keys, "deleted_keys": plan.deleted_keys,
            "phantom_keys": plan.phantom_keys, "encodings": dict(plan.encodings),
            "already_in_place": plan.in_place, "rewrites": plan.rewrite_count,
            "tombstones": plan.tombstone_count,
            "partitions_touched": list(plan.partitions_touched()),
            "phantom_examples": [_example(k, g) for k, g in plan.examples],
        }
    if v is not None:
        out["verification"] = {"topic": v.topic, "clean": v.clean, "live_keys": v.live_keys,
                               "phantom_keys": v.phantom_keys, "old_encoded": v.old_encoded,
                               "misplaced": v.misplaced,
                               "audit": None if v.audit is None else {
                                   "phantom_keys": v.audit[0], "misplaced": v.audit[1],
                                   "missed_deletes": v.audit[2],
                                   "mixed_framings": v.audit[3]},
                               "phantom_examples": [_example(k, g) for k, g in v.examples]}
    return out


def _example(key: bytes, group: Shown) -> dict[str, Any]:
    return {"new_key_hex": key.hex(), "records": [
        {"encoding": e, "partition": p, "offset": o, "key_hex": k.hex()} for e, p, o, k in group]}


def render_text(report: MigrationReport) -> str:
    where = report.topic if report.target == report.topic else \
        f"{report.topic} -> {report.target} (cut-over)"
    lines = [f"migrate {where}: {report.records_read} records read"
             + (f", {report.null_keys} with a null key (skipped)" if report.null_keys else "")]
    if report.resumed_from:
        lines.append(f"last run: phase {report.resumed_from!r} (state {report.state_path})")
    if report.plan is not None:
        lines += _plan_lines(report, report.plan)
    if not report.dry_run and not report.wrote_nothing:
        lines.append(f"wrote {report.rewrites_acknowledged} rewrites "
                     f"and {report.tombstones_acknowledged} tombstones, all acknowledged")
    if report.verification is not None:
        lines += _verification_lines(report.verification)
    lines += [f"note: {n}" for n in report.notes]
    return redact("\n".join(lines))


def _plan_lines(report: MigrationReport, plan: MigrationPlan) -> list[str]:
    """What the topic holds and what the run writes to migrate it."""
    enc = ", ".join(f"{n} {name}" for name, n in sorted(plan.encodings.items())) or "none"
    lines = [
        f"live records by key encoding: {enc}",
        f"rows: {plan.live_keys} live, {plan.deleted_keys} deleted by a later tombstone, "
        f"{plan.phantom_keys} live under two or more key encodings (phantoms)",
        f"plan: {plan.rewrite_count} rows to rewrite under the new key "
        f"({plan.in_place} already in place), then {plan.tombstone_count} tombstones for "
        "the old key byte strings",
        "partitions touched: " + (", ".join(map(str, plan.partitions_touched())) or "none"),
        *_phantom_lines(plan.examples),
    ]
    if not plan.empty:
        lines.append(f"consumers of {report.target} see both the old and the new key of "
                     "a row live between the rewrite and the tombstones; "
                     "no row is ever missing")
    elif not report.dry_run:
        lines.append("nothing written: the topic is already migrated")
    return lines


def _verification_lines(v: Verification) -> list[str]:
    """The verification's verdict, with the audit's numbers when it ran."""
    audit = "" if v.audit is None else (
        f"; keyguard audit: {v.audit[0]} phantom keys, {v.audit[1]} misplaced records, "
        f"{v.audit[2]} missed deletes, {v.audit[3]} sides in two framings")
    if v.clean:
        return [f"verified {v.topic}: {v.live_keys} rows, each live under the new key "
                "only, on its murmur2 partition" + audit]
    return [f"VERIFICATION FAILED on {v.topic}: {v.phantom_keys} rows live under "
            f"two or more keys, {v.old_encoded} records under an old key, "
            f"{v.misplaced} on another partition than murmur2's{audit}; run the "
            "migration again (producers writing old keys must be switched first)",
            *_phantom_lines(v.examples)]


def _phantom_lines(examples: Sequence[tuple[bytes, Shown]]) -> list[str]:
    return [f"  phantom: new key {show_bytes(key)} live as "
            + "; ".join(f"{e} p{p}@{o} {show_bytes(k)}" for e, p, o, k in group)
            for key, group in examples]


def show_bytes(data: bytes) -> str:
    """Key bytes as a reader sees them: quoted when printable UTF-8, else hex."""
    try:
        text = data.decode("utf-8")
        if text.isprintable():
            return repr(text)
    except UnicodeDecodeError:
        pass
    return data.hex()
