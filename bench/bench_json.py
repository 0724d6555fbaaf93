"""Encode a realistic 8-column table with the json format's encode_batch vs a json.dumps loop.

The json.dumps loop is the naive baseline (and not even Flink-correct: `1e+20`, no Java
decimals, Python escaping); encode_batch produces Flink's exact bytes. Both run in this process
over the same rows, alternated after the same warm-up (bench/harness).
Usage: python bench/bench_json.py [--rows N] [--batch N] [--runs N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa
from harness import Contender, Run, alternate, load_average, text_digest
from harness import table as table_of

from keyguard.formats.codec import create_codec
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

TABLE = row(
    ("order_id", BigIntType().not_null()), ("customer", StringType()), ("city", StringType()),
    ("amount", DoubleType()), ("price", DecimalType(precision=12, scale=2)),
    ("created_at", TimestampType(precision=6)), ("paid", BooleanType()), ("quantity", IntType()),
)
SCHEMA = pa.schema([
    ("order_id", pa.int64()), ("customer", pa.string()), ("city", pa.string()),
    ("amount", pa.float64()), ("price", pa.decimal128(12, 2)),
    ("created_at", pa.timestamp("us")), ("paid", pa.bool_()), ("quantity", pa.int32()),
])
CITIES = ["Berlin", "São Paulo", "Zürich", "New York", "東京", "Lagos", "Paris", None]


def make_rows(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    start = dt.datetime(2024, 1, 1)
    return [{
        "order_id": 10_000_000 + i,
        "customer": f"customer-{rnd.randrange(100_000)}" if i % 50 else None,
        "city": rnd.choice(CITIES),
        "amount": round(rnd.uniform(0, 5000), rnd.choice((1, 2, 3))),
        "price": Decimal(rnd.randrange(1, 10_000_000)).scaleb(-2),
        "created_at": start + dt.timedelta(microseconds=rnd.randrange(10**13)),
        "paid": rnd.random() < 0.7,
        "quantity": rnd.randrange(1, 100),
    } for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=65_536, help="rows per Arrow record batch")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    rows = make_rows(args.rows)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    batches = table.to_batches(max_chunksize=args.batch)
    codec = create_codec("json", TABLE)

    sample = rows[: min(2000, args.rows)]
    first = [b for batch in table.slice(0, len(sample)).to_batches()
             for b in codec.encode_batch(batch)]
    assert first == [codec.encode(r) for r in sample], "batch != row encoding"

    def ours() -> Run:
        t0 = time.perf_counter()
        out = [b for batch in batches for b in codec.encode_batch(batch)]
        secs = time.perf_counter() - t0
        assert len(out) == args.rows
        return Run(secs, text_digest(*out[:1000]))  # the same bytes on every run

    def naive() -> Run:
        t0 = time.perf_counter()
        out = [json.dumps(r, separators=(",", ":"), ensure_ascii=False, default=str).encode()
               for r in rows]
        secs = time.perf_counter() - t0
        assert len(out) == args.rows
        return Run(secs)  # not Flink's bytes: nothing to compare

    contenders = [Contender("stdlib json.dumps loop", naive),
                  Contender("keyguard json encode_batch", ours)]
    before = load_average()
    alternate(contenders, runs=args.runs, warmup=1)
    print(table_of(contenders, baseline=contenders[0].name, load=(before, load_average()),
                   ratio_label="x json.dumps (throughput, goal >= 2x)",
                   title=f"json encoding, {args.rows:,} rows, batches of {args.batch:,}, "
                         f"python {sys.version.split()[0]}, pyarrow {pa.__version__}"))
    for c in contenders:  # one line per contender, for bench/bench_before_after.py
        print(f"{c.name}: {args.rows / statistics.median(c.seconds):,.0f} rows/s")
    print(f"example: {first[0].decode()}")

if __name__ == "__main__":
    main()
