"""Where a key lands: key format, partition count, producer partitioner, and topic settings.

Compaction folds two records only if they share the exact key bytes *and* the partition. The
byte rules live in the format modules; these rules cover everything else that moves a key.
`topic_findings` is the entry point for callers that know the topic's settings (a broker
look-up) but not the key schemas.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from keyguard.guard.keys.side import Change, KeySide, partitioner_family
from keyguard.guard.keys.witness import ILLUSTRATIVE_PARTITIONS, place
from keyguard.guard.report import Finding, Witness
from keyguard.guard.rules import (
    KEY_FORMAT_CHANGED,
    PARTITION_COUNT_CHANGED,
    PARTITIONER_NOT_MURMUR2,
    TOPIC_NOT_COMPACTED,
)


def placement_changes(old: KeySide, new: KeySide) -> Iterator[Change]:
    if old.format != new.format:
        yield Change(KEY_FORMAT_CHANGED,
                     "key.format", f"key format {old.format} -> {new.format}: every "
                     "key is written as other bytes")
    if old.partitions and new.partitions and old.partitions != new.partitions:
        yield Change(PARTITION_COUNT_CHANGED,
                     "partitions", _partitions_message(old.partitions, new.partitions),
                     placement=True, by_example=True)
    change = _partitioner_message(old.partitioner, new.partitioner)
    if change:
        yield Change(PARTITIONER_NOT_MURMUR2,
                     "partitioner", change, placement=True, by_example=True)


def _partitions_message(a: int, b: int) -> str:
    return (f"partition count {a} -> {b}: murmur2(key) % {b} puts most keys on another "
            "partition than their existing records")


def _partitioner_message(old: str, new: str) -> str | None:
    fo, fn = partitioner_family(old), partitioner_family(new)
    if fn == "murmur2" and fo == "murmur2":
        return None
    if fo == fn and fn != "unkeyed":
        return (f"producer partitioner {new} ({fn}) is not murmur2: keys land elsewhere than "
                "where Flink and Java producers put them (the witness's old partition is "
                "murmur2's)")
    how = "ignores the key" if fn == "unkeyed" else f"hashes with {fn}"
    return (f"producer partitioner {old} -> {new}: the new one {how}, so updates and deletes "
            "land on other partitions than the records they replace"
            + ("" if fn == "murmur2" else "; set partitioner=murmur2_random (librdkafka) or the "
               "Java default"))


def topic_findings(
    cleanup_policy: str | None,
    partitions_old: int | None,
    partitions_new: int | None,
    partitioner: str = "murmur2",
    *,
    topic: str | None = None,
    sample_keys: Sequence[bytes] = (),
) -> list[Finding]:
    """Findings about the topic itself, for callers that read its settings from a broker.

    KG701 when `cleanup.policy` has no `compact`; KG602 when the partition count changes; KG603
    when the producer's partitioner is not murmur2. Witnesses use `sample_keys` (real key bytes
    from the topic, when the caller has them) or small stand-in keys.
    """
    out: list[Finding] = []
    if cleanup_policy is not None:
        policies = {p.strip().lower() for p in cleanup_policy.split(",")}
        if "compact" not in policies:
            out.append(Finding(TOPIC_NOT_COMPACTED, "cleanup.policy",
                               f"cleanup.policy is {cleanup_policy!r}, not compact: old keys are "
                               "deleted by retention, not kept as the latest state per key",
                               topic=topic))
    samples = list(sample_keys) or [f"key-{i}".encode() for i in range(64)]
    n_old = partitions_old or partitions_new or ILLUSTRATIVE_PARTITIONS
    n_new = partitions_new or n_old
    if partitions_old and partitions_new and partitions_old != partitions_new:
        out.append(Finding(PARTITION_COUNT_CHANGED, "partitions",
                           _partitions_message(partitions_old, partitions_new),
                           _placement_witness(samples, "murmur2", n_old, "murmur2", n_new),
                           topic=topic))
    msg = _partitioner_message("murmur2", partitioner)
    if msg:
        out.append(Finding(PARTITIONER_NOT_MURMUR2, "partitioner", msg,
                           _placement_witness(samples, "murmur2", n_old,
                                              partitioner_family(partitioner), n_new),
                           topic=topic))
    return out


def _placement_witness(samples: Sequence[bytes], fam_old: str, n_old: int, fam_new: str,
                       n_new: int) -> Witness | None:
    for key in samples:
        a, b = place(fam_old, key, n_old), place(fam_new, key, n_new)
        if a != b:
            return Witness({"key_bytes": key.hex()}, key, key, None, a, b)
    return None
