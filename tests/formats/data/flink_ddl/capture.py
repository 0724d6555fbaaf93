"""Regenerate describe.json: what Apache Flink 2.3 makes of the DDLs in test_flink_ddl.py.

Not run by the test suite. Needs PyFlink 2.3 and Java 17 in a separate venv (see
../flink_golden/capture.py), no Kafka connector: CREATE TABLE only enters the catalog, and
DESCRIBE shows each column's name, type, nullability, key, extras (METADATA, AS) and watermark.

    ../flinkvenv/bin/python tests/formats/data/flink_ddl/capture.py

A statement Flink refuses is stored with its error's first line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1] / "test_flink_ddl.py"
OUT = HERE / "describe.json"


def statements() -> dict[str, str]:
    """The module-level DDL constants (NAME = \"\"\"CREATE ...\"\"\") of the test module."""
    src = TESTS.read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(
        r'^([A-Z_]+) = """(.*?)"""', src, re.S | re.M) if "CREATE" in m.group(2)}


def main() -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    out: dict[str, object] = {}
    for name, ddl in statements().items():
        statement = ddl.strip().rstrip(";")
        table = re.search(r"TABLE\s+(?:IF NOT EXISTS\s+)?(.+?)\s*\(", statement).group(1)
        try:
            env.execute_sql(statement)
            rows = env.execute_sql(f"DESCRIBE {table}").collect()
            out[name] = [[None if v is None else str(v) for v in r] for r in rows]
            env.execute_sql(f"DROP {'TEMPORARY ' if 'TEMPORARY' in statement else ''}"
                            f"TABLE {table}")
        except Exception as exc:  # stored: Flink refused the statement
            out[name] = {"error": str(exc).splitlines()[0]}
    lines = [f" {json.dumps(name)}: " + (json.dumps(rows) if isinstance(rows, dict) else
             "[\n" + ",\n".join(f"  {json.dumps(r)}" for r in rows) + "\n ]")
             for name, rows in out.items()]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"wrote {len(out)} statements to {OUT}")


if __name__ == "__main__":
    main()
