"""The Spark contender of bench_audit.py: `keyguard.sparkio.audit` of one topic on a local
Spark master given on the command line, in a fresh process. The session is started before
the clock (a JVM start says nothing about the audit); the clock covers the call to the
result: capture, one task per partition reading and folding it, the merge and the judge.
Prints one JSON object: the seconds, the audit's counts, the state size its report claims and
the peak RSS of this driver process (the JVM and the Python workers are other processes).

    python bench/audit_spark.py BOOTSTRAP TOPIC FORMAT REGISTRY_URL MASTER
"""

from __future__ import annotations

import json
import sys
import time

from bench_audit import plan_options, table_columns  # bench/, this script's directory
from harness import local_spark, own_peak_rss


def main() -> None:
    bootstrap, topic, fmt, registry, master = sys.argv[1:6]
    from keyguard import sparkio

    spark = local_spark("keyguard-bench-audit", **{"spark.master": master})
    options = {k: v for k, v in plan_options(topic, fmt, registry).items() if k != "topic"}
    start = time.perf_counter()
    result = sparkio.audit(spark, topic=topic, schema=table_columns(fmt),
                           **{"properties.bootstrap.servers": bootstrap, **options})
    elapsed = time.perf_counter() - start
    totals = result.data["totals"]
    print(json.dumps({"seconds": elapsed, "records": result.records,
                      "live_keys": totals["live_keys"], "phantom_keys": result.phantom_keys,
                      "missed_deletes": result.missed_deletes,
                      "held_bytes": result.data["held"]["bytes"],
                      "peak_rss_bytes": own_peak_rss()}))
    spark.stop()


if __name__ == "__main__":
    main()
