"""sparkio.migrate: the topic read by Spark tasks, one per partition; the same plan, writes,
verification and report as `keyguard migrate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_migrate import COLS, V1, V2, consumer_table, migration, phantom_topic, rows

from keyguard import sparkio
from keyguard.sparkio.migrate_topic import migrate_topic

pytestmark = pytest.mark.slow


def test_spark_migrate_repairs_phantoms_like_the_command(spark: Any, kafka_bootstrap: str,
                                                         tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    # the plan the command makes, as a dry run, to compare with
    local = migrate_topic(migration(kafka_bootstrap, topic, tmp_path, dry_run=True))
    report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                             old=[V1], new=V2, state_path=tmp_path / "spark.json")
    assert report.plan is not None and local.plan is not None
    assert report.plan.rewrites == local.plan.rewrites
    assert report.plan.tombstones == local.plan.tombstones
    assert report.records_read == local.records_read == 17
    assert (report.rewrites_acknowledged, report.tombstones_acknowledged) == (3, 9)
    assert report.verification is not None and report.verification.clean
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected
    again = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                            old=[V1], new=V2, state_path=tmp_path / "spark.json")
    assert again.wrote_nothing and again.resumed_from == "verified"
