"""Key + value avro-confluent encoding: keyguard's Arrow batch encoder vs confluent-kafka.

    python bench/bench_avro_confluent.py [--rows 1000000] [--batch-rows 65536] [--runs 3]
        [--keyguard-only]

Same rows, same run, same in-process mock registry (so the same schema ids): keyguard encodes
Arrow record batches with `encode_batch` (list of bytes per row, as a producer needs them);
confluent-kafka's AvroSerializer encodes the same rows as dicts, one call per key and value.
A sample of rows is checked to be byte-equal before anything is timed; the contenders then
alternate after the same warm-up (bench/harness).
"""

from __future__ import annotations

import argparse
import decimal
import io
import statistics
import sys
import time
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Contender, Run, alternate, load_average, text_digest
from harness import table as table_of

from keyguard.formats.avro_confluent_format import AVRO_CONFLUENT_FORMAT, AvroConfluentCodec
from keyguard.formats.codec import CodecContext
from keyguard.formats.projection import EXCEPT_KEY, project
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.types import (
    BigIntType,
    BooleanType,
    DecimalType,
    DoubleType,
    IntType,
    StringType,
    TimestampType,
    row,
)

TOPIC = "orders"
TABLE = row(
    ("region", StringType()), ("order_id", BigIntType()),
    ("customer", StringType()), ("amount", DecimalType(precision=12, scale=2)),
    ("price", DoubleType()), ("quantity", IntType()), ("created_at", TimestampType(precision=3)),
    ("paid", BooleanType()), ("note", StringType()), ("discount", DoubleType()),
)
LAYOUT = project(TABLE, "region, order_id", value_fields_include=EXCEPT_KEY)


def make_table(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    regions = np.array(["eu-west-1", "us-east-1", "ap-south-1", "sa-east-1"])
    customers = np.array([f"customer-{i:05d}" for i in range(5000)])
    notes = np.array(["gift wrap", "leave at door", "express", "fragile — handle with care"])
    cents = rng.integers(-10**6, 10**9, n)
    note_valid = rng.random(n) > 0.3
    discount_valid = rng.random(n) > 0.5
    return pa.table({
        "region": pa.array(regions[rng.integers(0, len(regions), n)]),
        "order_id": pa.array(rng.integers(0, 1 << 40, n)),
        "customer": pa.array(customers[rng.integers(0, len(customers), n)]),
        "amount": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents],
                           pa.decimal128(12, 2)),
        "price": pa.array(rng.random(n) * 1000),
        "quantity": pa.array(rng.integers(1, 100, n).astype(np.int32)),
        "created_at": pa.array(1_700_000_000_000 + rng.integers(0, 10**10, n),
                               pa.timestamp("ms")).cast(pa.timestamp("us")),
        "paid": pa.array(rng.random(n) > 0.2),
        "note": pa.array(notes[rng.integers(0, len(notes), n)], mask=~note_valid),
        "discount": pa.array(rng.random(n), mask=~discount_valid),
    })


def codecs(registry: MockRegistry) -> tuple[AvroConfluentCodec, AvroConfluentCodec]:
    opts = AVRO_CONFLUENT_FORMAT.options.validate({"url": registry.name})
    key = AVRO_CONFLUENT_FORMAT.build(LAYOUT.key_type, opts,
                                      CodecContext("key", TOPIC, registry))
    value = AVRO_CONFLUENT_FORMAT.build(LAYOUT.value_type, opts,
                                        CodecContext("value", TOPIC, registry))
    for codec in (key, value):  # registration: the explicit step before the first record
        bind_schema_id(codec)
    return key, value  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keyguard-only", action="store_true",
                        help="time only keyguard's encoder (before/after comparisons of it); "
                             "the sample is still checked against the AvroSerializer")
    args = parser.parse_args()

    t0 = time.perf_counter()
    table = make_table(args.rows)
    rows = table.to_pylist()
    keys = [{"region": r["region"], "order_id": r["order_id"]} for r in rows]
    values = [{k: r[k] for k in LAYOUT.value_columns} for r in rows]
    print(f"{args.rows:,} rows prepared in {time.perf_counter() - t0:.1f}s")

    registry = MockRegistry("bench")
    key_codec, value_codec = codecs(registry)
    key_ser = AvroSerializer(registry.client, key_codec.schema_text)
    value_ser = AvroSerializer(registry.client, value_codec.schema_text)
    kctx = SerializationContext(TOPIC, MessageField.KEY)
    vctx = SerializationContext(TOPIC, MessageField.VALUE)

    # Byte-equality on a sample, before timing.
    sample = table.slice(0, 2000)
    ours_k, ours_v = key_codec.encode_batch(sample), value_codec.encode_batch(sample)
    theirs_k = [key_ser(k, kctx) for k in keys[:2000]]
    theirs_v = [value_ser(v, vctx) for v in values[:2000]]
    diff = sum(a != b for a, b in zip(ours_k + ours_v, theirs_k + theirs_v, strict=True))
    print(f"sample of {len(sample)} rows: key+value bytes differ in {diff} records "
          "(only DECIMALs with unscaled -2^(8k-1) may, where Java and fastavro disagree)")

    batches = table.to_batches(max_chunksize=args.batch_rows)

    def ours() -> Run:
        t0 = time.perf_counter()
        out_k, out_v = [], []
        for batch in batches:
            out_k += key_codec.encode_batch(batch)
            out_v += value_codec.encode_batch(batch)
        secs = time.perf_counter() - t0
        return Run(secs, text_digest(*out_k[:500], *out_v[:500]))

    def theirs() -> Run:
        t0 = time.perf_counter()
        out_k, out_v = [], []
        for k, v in zip(keys, values, strict=True):
            out_k.append(key_ser(k, kctx))
            out_v.append(value_ser(v, vctx))
        return Run(time.perf_counter() - t0)  # DECIMAL edge cases may differ (see above)

    # The Avro writing alone, without the serializer's per-call bookkeeping: a lower bound.
    key_schema = fastavro.parse_schema(key_codec.avro_schema, named_schemas={})
    value_schema = fastavro.parse_schema(value_codec.avro_schema, named_schemas={})

    def bare() -> Run:
        t0 = time.perf_counter()
        for k, v in zip(keys, values, strict=True):
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, key_schema, k)
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, value_schema, v)
        return Run(time.perf_counter() - t0)  # no framing: not the same bytes

    contenders = [Contender("confluent AvroSerializer", theirs),
                  Contender("fastavro.schemaless_writer, no frame", bare),
                  Contender("keyguard encode_batch (key+value)", ours)]
    if args.keyguard_only:
        contenders = contenders[-1:]
    before = load_average()
    alternate(contenders, runs=args.runs, warmup=1)
    print(table_of(contenders, baseline=contenders[0].name, load=(before, load_average()),
                   ratio_label="x itself (--keyguard-only)" if args.keyguard_only else
                   "x AvroSerializer (throughput, goal >= 3x)",
                   title=f"avro-confluent key+value encoding, {args.rows:,} rows"))
    for c in contenders:  # one line per contender, for bench/bench_before_after.py
        print(f"{c.name}: {args.rows / statistics.median(c.seconds):,.0f} rows/s")

if __name__ == "__main__":
    main()
