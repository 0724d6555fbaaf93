"""Regenerate golden.jsonl: how Avro Java's GenericDatumReader(writer, reader) reads each case.

Not run by the test suite. Flink's avro-confluent reader (RegistryAvroDeserializationSchema)
reads with Avro Java's GenericDatumReader(writer schema, reader schema); this runs that reader
(Oracle.java, compiled against an Avro jar) on bytes fastavro wrote with the writer schema and
stores the datum it reads, or its error. Needs a JDK (17) and Avro's jar with its dependencies;
Spark's jars directory has Avro 1.12.1 and all it needs:

    python tests/formats/data/avro_resolution/capture.py [jars directory]
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro

HERE = Path(__file__).resolve().parent
OUT = HERE / "golden.jsonl"
JARS = (
    "avro-1.12.1.jar",
    "jackson-core-*.jar",
    "jackson-databind-*.jar",
    "jackson-annotations-*.jar",
    "slf4j-api-*.jar",
    "commons-compress-*.jar",
)


def rec(
    name: str, fields: list[tuple[Any, ...]], ns: str | None = None, **kw: Any
) -> dict[str, Any]:
    """A record schema; a field is (name, type) or (name, type, default)."""
    d: dict[str, Any] = {
        "type": "record",
        "name": name,
        "fields": [
            {"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2 else {})}
            for f in fields
        ],
    }
    if ns:
        d["namespace"] = ns
    d.update(kw)
    return d


def enum(name: str, symbols: list[str], ns: str | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "type": "enum",
        "name": name,
        "symbols": symbols,
        **({"namespace": ns} if ns else {}),
        **kw,
    }


F = "org.apache.flink.avro.generated"  # Flink's derived record namespace
addr = rec("Address", [("street", "string")], "com.acme")
CASES: list[tuple[str, Any, Any, Any]] = [
    (
        "top_level_record_renamed",
        rec("Order", [("id", "long")], "com.acme"),
        rec("record", [("id", "long")], F),
        {"id": 7},
    ),
    (
        "nested_record_renamed",
        rec("Order", [("id", "long"), ("ship", addr)], "com.acme"),
        rec("record", [("id", "long"), ("ship", rec("record_ship", [("street", "string")]))], F),
        {"id": 1, "ship": {"street": "Main"}},
    ),
    (
        "nullable_nested_record_renamed",
        rec("Order", [("id", "long"), ("ship", ["null", addr])], "com.acme"),
        rec(
            "record",
            [
                ("id", "long"),
                ("ship", ["null", rec("record_ship", [("street", ["null", "string"])])]),
            ],
            F,
        ),
        {"id": 1, "ship": {"street": "Main"}},
    ),
    (
        "nullable_nested_record_null",
        rec("Order", [("id", "long"), ("ship", ["null", addr])], "com.acme"),
        rec(
            "record",
            [("id", "long"), ("ship", ["null", rec("record_ship", [("street", "string")])])],
            F,
        ),
        {"id": 1, "ship": None},
    ),
    (
        "reused_named_type_two_reader_names",
        rec("Order", [("a", addr), ("b", "com.acme.Address")], "com.acme"),
        rec(
            "record",
            [
                ("a", rec("record_a", [("street", "string")])),
                ("b", rec("record_b", [("street", "string")])),
            ],
            F,
        ),
        {"a": {"street": "A"}, "b": {"street": "B"}},
    ),
    (
        "union_structure_match_picks_first_fitting",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R2", [("u", ["null", rec("B", [("y", "string")]), rec("C", [("x", "int")])])]),
        {"u": {"x": 5}},
    ),
    (
        "union_structure_match_prefers_same_short_name",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "w")])]),
        rec("R2", [("u", ["null", rec("B", [("x", "int")]), rec("A", [("x", "int")], "r")])]),
        {"u": {"x": 5}},
    ),
    (
        "union_exact_full_name_wins",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "n")])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("B", [("x", "int")]),
                        rec("A", [("x", "int"), ("z", "int", 9)], "n"),
                    ],
                )
            ],
        ),
        {"u": {"x": 5}},
    ),
    (
        "union_no_structure_match",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R2", [("u", ["null", rec("B", [("y", "string")])])]),
        {"u": {"x": 5}},
    ),
    (
        "writer_union_reader_plain_record",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R2", [("u", rec("B", [("x", "int")]))]),
        {"u": {"x": 5}},
    ),
    (
        "enum_renamed_field",
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "com.acme"))]),
        rec("R", [("c", enum("Colour", ["RED", "GREEN"]))]),
        {"c": "GREEN"},
    ),
    (
        "enum_renamed_in_union",
        rec("R", [("c", ["null", enum("Color", ["RED", "GREEN"], "com.acme")])]),
        rec("R", [("c", ["null", enum("Colour", ["RED", "GREEN"])])]),
        {"c": "GREEN"},
    ),
    (
        "enum_same_name_in_union",
        rec("R", [("c", ["null", enum("Color", ["RED", "GREEN"])])]),
        rec("R", [("c", ["null", enum("Color", ["GREEN", "RED"])])]),
        {"c": "GREEN"},
    ),
    (
        "fixed_renamed_field",
        rec("R", [("f", {"type": "fixed", "name": "F4", "size": 4})]),
        rec("R", [("f", {"type": "fixed", "name": "G4", "size": 4})]),
        {"f": b"abcd"},
    ),
    (
        "fixed_renamed_in_union",
        rec("R", [("f", ["null", {"type": "fixed", "name": "F4", "size": 4}])]),
        rec("R", [("f", ["null", {"type": "fixed", "name": "G4", "size": 4}])]),
        {"f": b"abcd"},
    ),
    (
        "fixed_same_name_other_namespace",
        rec("R", [("f", {"type": "fixed", "name": "F4", "namespace": "a", "size": 4})]),
        rec("R", [("f", {"type": "fixed", "name": "F4", "namespace": "b", "size": 4})]),
        {"f": b"abcd"},
    ),
    (
        "decimal_fixed_renamed",
        rec(
            "R",
            [
                (
                    "d",
                    {
                        "type": "fixed",
                        "name": "dec",
                        "size": 9,
                        "logicalType": "decimal",
                        "precision": 20,
                        "scale": 2,
                    },
                )
            ],
        ),
        rec(
            "R",
            [
                (
                    "d",
                    {
                        "type": "fixed",
                        "name": "record_d",
                        "size": 9,
                        "logicalType": "decimal",
                        "precision": 20,
                        "scale": 2,
                    },
                )
            ],
        ),
        {"d": Decimal("12.34")},
    ),
    (
        "recursive_renamed",
        rec("LinkedList", [("v", "int"), ("next", ["null", "LinkedList"])]),
        rec("Node", [("v", "int"), ("next", ["null", "Node"])]),
        {"v": 1, "next": {"v": 2, "next": None}},
    ),
    (
        "reader_alias_rename",
        rec("Order", [("id", "long")], "com.acme"),
        rec("record", [("id", "long")], F, aliases=["com.acme.Order"]),
        {"id": 3},
    ),
    (
        "array_of_renamed_records",
        rec("R", [("xs", {"type": "array", "items": rec("Item", [("q", "int")])})]),
        rec("S", [("xs", {"type": "array", "items": rec("record_xs", [("q", "int")])})]),
        {"xs": [{"q": 1}, {"q": 2}]},
    ),
    (
        "map_of_renamed_records",
        rec("R", [("m", {"type": "map", "values": rec("Item", [("q", "int")])})]),
        rec("S", [("m", {"type": "map", "values": rec("record_m", [("q", "int")])})]),
        {"m": {"k": {"q": 1}}},
    ),
    (
        "union_two_writer_records_one_reader",
        rec("R", [("u", [rec("A", [("x", "int")]), rec("B", [("x", "int"), ("y", "int")])])]),
        rec("R", [("u", ["null", rec("C", [("x", "int")])])]),
        {"u": {"x": 1, "y": 2}},
    ),
    (
        "union_record_missing_field_with_default",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R", [("u", ["null", rec("B", [("x", "int"), ("y", "string", "d")])])]),
        {"u": {"x": 1}},
    ),
    (
        "union_record_missing_field_without_default",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R", [("u", ["null", rec("B", [("x", "int"), ("y", "string")])])]),
        {"u": {"x": 1}},
    ),
    (
        "top_record_missing_field_without_default",
        rec("A", [("x", "int")]),
        rec("B", [("x", "int"), ("y", "string")]),
        {"x": 1},
    ),
    (
        "union_reader_named_record_writer_int_promotion",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R", [("u", ["null", rec("B", [("x", "long")])])]),
        {"u": {"x": 1}},
    ),
    (
        "enum_same_short_name_other_namespace",
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "a"))]),
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "b"))]),
        {"c": "GREEN"},
    ),
    (
        "enum_same_short_name_other_namespace_in_union",
        rec("R", [("c", ["null", enum("Color", ["RED", "GREEN"], "a")])]),
        rec("R", [("c", ["null", enum("Color", ["RED", "GREEN"], "b")])]),
        {"c": "GREEN"},
    ),
    (
        "fixed_same_short_name_other_namespace_in_union",
        rec("R", [("f", ["null", {"type": "fixed", "name": "F4", "namespace": "a", "size": 4}])]),
        rec("R", [("f", ["null", {"type": "fixed", "name": "F4", "namespace": "b", "size": 4}])]),
        {"f": b"abcd"},
    ),
    (
        "enum_reader_alias",
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "com.acme"))]),
        rec("R", [("c", enum("Colour", ["RED", "GREEN"], aliases=["com.acme.Color"]))]),
        {"c": "GREEN"},
    ),
    (
        "union_both_records_fit_first_wins",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R2", [("u", ["null", rec("B", [("x", "int")]), rec("C", [("x", "int")])])]),
        {"u": {"x": 5}},
    ),
    (
        "union_writer_extra_field_structure_match",
        rec("R", [("u", ["null", rec("A", [("x", "int"), ("y", "string")])])]),
        rec("R2", [("u", ["null", rec("B", [("x", "int")])])]),
        {"u": {"x": 5, "y": "s"}},
    ),
    (
        "union_nested_record_inside_union_branch_renamed",
        rec("R", [("u", ["null", rec("A", [("x", "int"), ("in", rec("I", [("q", "int")]))])])]),
        rec("R2", [("u", ["null", rec("B", [("x", "int"), ("in", rec("J", [("q", "int")]))])])]),
        {"u": {"x": 5, "in": {"q": 6}}},
    ),
    (
        "union_nested_mismatch_inside_branch",
        rec("R", [("u", ["null", rec("A", [("x", "int"), ("in", rec("I", [("q", "int")]))])])]),
        rec("R2", [("u", ["null", rec("B", [("x", "int"), ("in", rec("J", [("q", "string")]))])])]),
        {"u": {"x": 5, "in": {"q": 6}}},
    ),
    (
        "union_nested_enum_rename_inside_branch",
        rec("R", [("u", ["null", rec("A", [("c", enum("E", ["X"]))])])]),
        rec("R2", [("u", ["null", rec("B", [("c", enum("F", ["X"]))])])]),
        {"u": {"c": "X"}},
    ),
    (
        "union_record_vs_map_reader",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec("R2", [("u", ["null", {"type": "map", "values": "int"}, rec("B", [("x", "int")])])]),
        {"u": {"x": 5}},
    ),
    (
        "union_first_fit_tagged",
        rec("R", [("u", ["null", rec("A", [("x", "int")])])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("B", [("x", "int"), ("t", "string", "B")]),
                        rec("C", [("x", "int"), ("t", "string", "C")]),
                    ],
                )
            ],
        ),
        {"u": {"x": 5}},
    ),
    (
        "union_short_name_preferred_tagged",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "w")])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("B", [("x", "int"), ("t", "string", "B")]),
                        rec("A", [("x", "int"), ("t", "string", "A")], "r"),
                    ],
                )
            ],
        ),
        {"u": {"x": 5}},
    ),
    (
        "union_last_short_name_wins_tagged",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "w")])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("A", [("x", "int"), ("t", "string", "1")], "r1"),
                        rec("A", [("x", "int"), ("t", "string", "2")], "r2"),
                    ],
                )
            ],
        ),
        {"u": {"x": 5}},
    ),
    (
        "union_shallow_fit_picks_failing_branch",
        rec("R", [("u", ["null", rec("A", [("x", "int"), ("in", rec("I", [("q", "int")]))])])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("B", [("x", "int"), ("in", rec("J", [("q", "string")]))]),
                        rec("C", [("x", "int"), ("in", rec("K", [("q", "int")]))]),
                    ],
                )
            ],
        ),
        {"u": {"x": 5, "in": {"q": 6}}},
    ),
    (
        "union_exact_full_name_beats_earlier_fit_tagged",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "n")])]),
        rec(
            "R2",
            [
                (
                    "u",
                    [
                        "null",
                        rec("B", [("x", "int"), ("t", "string", "B")]),
                        rec("A", [("x", "int"), ("t", "string", "A")], "n"),
                    ],
                )
            ],
        ),
        {"u": {"x": 5}},
    ),
    (
        "union_int_into_float_or_int",
        rec("R", [("u", "int")]),
        rec("R", [("u", ["float", "int"])]),
        {"u": 5},
    ),
    (
        "union_int_promotes_to_first_promotable",
        rec("R", [("u", "int")]),
        rec("R", [("u", ["null", "string", "double", "long"])]),
        {"u": 5},
    ),
    (
        "fixed_size_mismatch",
        rec("R", [("f", {"type": "fixed", "name": "F", "size": 4}), ("g", "int")]),
        rec("R", [("f", {"type": "fixed", "name": "F", "size": 2}), ("g", "int")]),
        {"f": b"abcd", "g": 1},
    ),
    (
        "writer_union_equiv_record_renamed_namespace",
        rec("R", [("u", ["null", rec("A", [("x", "int")], "w")])]),
        rec("R", [("u", ["null", rec("A", [("x", "int")], "r")])]),
        {"u": {"x": 5}},
    ),
    (
        "top_level_nullable_union_record_renamed",
        ["null", rec("Order", [("id", "long")], "com.acme")],
        ["null", rec("record", [("id", "long")], F)],
        {"id": 9},
    ),
    (
        "field_alias_in_renamed_record",
        rec("Order", [("old", "long")], "com.acme"),
        {
            "type": "record",
            "name": "record",
            "namespace": F,
            "fields": [{"name": "new", "type": "long", "aliases": ["old"]}],
        },
        {"old": 4},
    ),
    (
        "enum_other_namespace_into_reader_union",
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "a"))]),
        rec("R", [("c", ["null", enum("Color", ["RED", "GREEN"], "b")])]),
        {"c": "GREEN"},
    ),
    (
        "enum_same_full_name_into_reader_union",
        rec("R", [("c", enum("Color", ["RED", "GREEN"], "a"))]),
        rec("R", [("c", ["null", enum("Color", ["GREEN", "RED"], "a")])]),
        {"c": "GREEN"},
    ),
    (
        "skipped_writer_field_of_named_type",
        rec(
            "Order",
            [("id", "long"), ("extra", rec("Extra", [("e", "string")])), ("c", enum("E", ["X"]))],
            "com.acme",
        ),
        rec("record", [("id", "long")], F),
        {"id": 1, "extra": {"e": "s"}, "c": "X"},
    ),
]


def _bytes(writer: Any, datum: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer, named_schemas={}), datum)
    return buf.getvalue()


def main() -> None:
    import pyspark

    jars = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(pyspark.__file__).parent / "jars"
    classpath = ":".join(str(next(jars.glob(j))) for j in JARS)
    lines = [(name, w, r, _bytes(w, datum).hex()) for name, w, r, datum in CASES]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["javac", "-d", tmp, "-cp", classpath, str(HERE / "Oracle.java")], check=True
        )
        stdin = "".join(f"{json.dumps(w)}\t{json.dumps(r)}\t{h}\n" for _, w, r, h in lines)
        out = subprocess.run(
            ["java", "-cp", f"{classpath}:{tmp}", "Oracle"],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    with OUT.open("w") as f:
        for (name, w, r, h), answer in zip(lines, out, strict=True):
            status, text = answer.split("\t", 1)
            case = {"name": name, "writer": w, "reader": r, "hex": h}
            if status == "OK":
                case["java"] = json.loads(text)
            else:
                case["java_error"] = text
            f.write(json.dumps(case) + "\n")
    print(f"wrote {len(lines)} cases to {OUT.relative_to(HERE.parents[3])}")


if __name__ == "__main__":
    main()
