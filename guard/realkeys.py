"""The topic itself as evidence: real keys re-encoded under the candidate, and their placement.

The structural analysis reasons about every key a schema allows; this looks at keys that exist.
Each sampled key is decoded with the candidate and encoded again: a key the candidate cannot
reproduce byte for byte is orphaned, whatever the schemas say (and it catches topics whose keys
never matched their registered schema). Each key's partition is compared with murmur2's choice:
keys placed by another partitioner are split from what Flink, Java and keyguard producers write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyguard.formats.errors import KeyguardError
from keyguard.formats.framing import Headers
from keyguard.formats.partitioner import partition_for
from keyguard.guard.keys.analyze import encoder, side_codec
from keyguard.guard.keys.known import WriterSchema
from keyguard.guard.keys.side import KeySide
from keyguard.guard.report import Finding, Witness
from keyguard.guard.rules import (  # noqa: F401  REAL_KEY_RULES: re-exported
    REAL_KEY_CHANGES,
    REAL_KEY_MISPLACED,
    REAL_KEY_RULES,
)


def real_key_findings(
    new: KeySide,
    sample_keys: tuple[tuple[bytes, int], ...],
    partitions: int,
    *,
    writer_schemas: Mapping[int | str, WriterSchema],
    topic: str,
    subject: str | None = None,
    headers: Mapping[bytes, Headers] | None = None,
) -> list[Finding]:
    """KG013 for the first sampled key the candidate cannot reproduce, KG014 for placement.

    `writer_schemas` are the schemas (by id) the sampled keys were written with, as gathered
    from the registry: decoding asks nothing. `headers`: each sampled key's record headers,
    where a header framing keeps its schema id.
    """
    if not sample_keys:
        return []
    findings: list[Finding] = []
    decode = side_decoder(new, writer_schemas, topic)
    changed, first = 0, None
    for key, _ in sample_keys:
        w = _round_trip(new, decode, key, topic, (headers or {}).get(key))
        if w is not None:
            changed += 1
            first = first or w
    if first is not None:
        findings.append(Finding(
            REAL_KEY_CHANGES, "$",
            f"{changed} of {len(sample_keys)} keys sampled from the topic do not come back "
            f"byte for byte under the candidate {new.format} key schema",
            first, topic=topic, subject=subject))
    misplaced = [(k, p, partition_for(k, partitions)) for k, p in sample_keys
                 if p >= 0 and partition_for(k, partitions) != p]
    if misplaced:
        key, actual, murmur = misplaced[0]
        findings.append(Finding(
            REAL_KEY_MISPLACED, "partitioner",
            f"{len(misplaced)} of {len(sample_keys)} sampled keys are not on their murmur2 "
            f"partition (of {partitions}): they were written by another partitioner",
            Witness({"key_bytes": key.hex()}, key, key, None, actual, murmur),
            topic=topic, subject=subject))
    return findings


def side_decoder(side: KeySide, writer_schemas: Mapping[int | str, WriterSchema],
                 topic: str) -> Any:
    """Decodes a key's bytes and headers with a side's schema (framed keys: the writer schema
    by the id the bytes or, under a header framing, the headers carry)."""
    return side_codec(side, topic, writer_schemas=writer_schemas,
                      exact_schema=True).decode_record


def decoded_examples(side: KeySide, sample_keys: tuple[tuple[bytes, int], ...],
                     writer_schemas: Mapping[int | str, WriterSchema], topic: str,
                     limit: int = 20, headers: Mapping[bytes, Headers] | None = None,
                     ) -> list[dict[str, Any]]:
    """Real keys as rows of `side`, for witnesses; keys the side cannot decode are skipped."""
    decode = side_decoder(side, writer_schemas, topic)
    out = []
    for key, _ in sample_keys[:limit]:
        try:
            row = decode(key, (headers or {}).get(key))
        except KeyguardError:
            continue
        if row is not None:
            out.append(row)
    return out


def _round_trip(new: KeySide, decode: Any, key: bytes, topic: str,
                headers: Headers) -> Witness | None:
    """None when the candidate reproduces `key`; else a witness (old = the real bytes)."""
    try:
        row = decode(key, headers)
    except KeyguardError as exc:
        return Witness({"key_bytes": key.hex()}, key, None, f"cannot decode: {exc.message}")
    if row is None:
        return Witness({"key_bytes": key.hex()}, key, None, "the candidate skips this key")
    schema_id = None
    if new.id_in_bytes:
        # The id is judged by KG501 from the scan; here only the payload counts. (Under a
        # header framing the key's bytes are the body alone: nothing to carry over.)
        schema_id = new.frame.registry_id(key)
    try:
        again = encoder(new, topic, schema_id)(row)
    except KeyguardError as exc:
        return Witness(row, key, None, f"cannot encode: {exc.message}")
    return None if again == key else Witness(row, key, again)
