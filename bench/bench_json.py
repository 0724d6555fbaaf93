"""Encode a realistic 8-column table with the json format's encode_batch vs a json.dumps loop.

The json.dumps loop is the naive baseline (and not even Flink-correct: `1e+20`, no Java
decimals, Python escaping); encode_batch produces Flink's exact bytes. Both run in this process
over the same rows. Usage: python bench/bench_json.py [--rows N] [--batch N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa

from formats.codec import create_codec
from formats.types import (
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
    args = ap.parse_args()

    rows = make_rows(args.rows)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    batches = table.to_batches(max_chunksize=args.batch)
    codec = create_codec("json", TABLE)

    t0 = time.perf_counter()
    ours = [b for batch in batches for b in codec.encode_batch(batch)]
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    naive = [json.dumps(r, separators=(",", ":"), ensure_ascii=False, default=str).encode()
             for r in rows]
    t_naive = time.perf_counter() - t0

    assert len(ours) == len(naive) == args.rows
    sample = rows[: min(2000, args.rows)]
    assert ours[: len(sample)] == [codec.encode(r) for r in sample], "batch != row encoding"
    print(f"rows: {args.rows:,}  batch: {args.batch:,}  python {sys.version.split()[0]}, "
          f"pyarrow {pa.__version__}")
    print(f"keyguard json encode_batch : {args.rows / t_ours:>12,.0f} rows/s  ({t_ours:.2f} s)")
    print(f"stdlib json.dumps loop     : {args.rows / t_naive:>12,.0f} rows/s  ({t_naive:.2f} s)")
    print(f"ratio                      : {t_naive / t_ours:>12.2f}x")
    print(f"example: {ours[0].decode()}")


if __name__ == "__main__":
    main()
