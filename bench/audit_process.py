"""The audit contender of bench_audit.py, run as a fresh process so its peak memory is its own:
`keyguard.guard.audit.scan.audit_topic` of one topic, in this process, as `keyguard audit`
runs it. Only `audit_topic` is timed (reading, folding, judging, the examples fetched again);
prints one JSON object: the seconds, the audit's counts, the state size its report claims and
the process's peak RSS.

    python bench/audit_process.py BOOTSTRAP TOPIC FORMAT REGISTRY_URL

The keyguard imported is whichever PYTHONPATH puts first (bench_audit.py points it at the tree
measured).
"""

from __future__ import annotations

import json
import sys
import time

from bench_audit import plan_options, table_columns  # bench/, this script's directory
from harness import own_peak_rss


def main() -> None:
    bootstrap, topic, fmt, registry = sys.argv[1:5]
    from keyguard.formats.registry.registration import open_plan
    from keyguard.formats.sqltypes import parse_columns
    from keyguard.guard.audit.scan import audit_topic

    plan = open_plan(parse_columns(table_columns(fmt)), plan_options(topic, fmt, registry))
    start = time.perf_counter()
    result = audit_topic(topic, plan, bootstrap=bootstrap)
    elapsed = time.perf_counter() - start
    totals = result.data["totals"]
    print(json.dumps({"seconds": elapsed, "records": result.records,
                      "live_keys": totals["live_keys"], "phantom_keys": result.phantom_keys,
                      "missed_deletes": result.missed_deletes,
                      "held_bytes": result.data["held"]["bytes"],
                      "held_entries": result.data["held"]["entries"],
                      "peak_rss_bytes": own_peak_rss()}))


if __name__ == "__main__":
    main()
