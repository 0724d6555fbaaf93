"""Avro schemas for keyguard's row types, derived exactly as Flink derives them.

`to_avro_schema` mirrors `AvroSchemaConverter.convertToSchema(LogicalType, String rowName,
boolean legacyTimestampMapping)` of flink-avro (Flink 2.x,
flink-formats/flink-avro/src/main/java/org/apache/flink/formats/avro/typeutils/
AvroSchemaConverter.java), because a registry assigns ids by schema text and Avro readers
resolve by record name: a schema that differs from Flink's in any detail is a new version.

What Flink does, and so what this module does:

- The record is named by `rowName`, default `org.apache.flink.avro.generated.record` (name
  `record`, namespace `org.apache.flink.avro.generated`); a nested ROW field `f` of a record
  named `N` is named `N_f`; ROWs inside an ARRAY or a MAP take the name of the field holding them.
- A nullable type becomes the union `["null", T]`; a NOT NULL type is `T` alone. Record fields of
  nullable type get `"default": null`, NOT NULL ones no default. A nullable top-level row
  becomes `["null", record]` (Flink's table rows are NOT NULL, so its records are plain).
- TINYINT, SMALLINT, INT -> int; BIGINT -> long; FLOAT -> float; DOUBLE -> double;
  STRING -> string; BYTES -> bytes; DECIMAL(p, s) -> bytes with logicalType decimal;
  DATE -> int date; TIME(p <= 3) -> int time-millis (TIME(p > 3) is an error);
  MAP<STRING, V> -> map (other key types are an error); ARRAY<T> -> array.
- `timestamp_mapping.legacy` (Flink 1.19+, default true):
  legacy: TIMESTAMP(p <= 3) -> long timestamp-millis, TIMESTAMP(p > 3) and TIMESTAMP_LTZ are
  errors. Not legacy: TIMESTAMP(p) -> local-timestamp-millis/-micros/-nanos and TIMESTAMP_LTZ(p)
  -> timestamp-millis/-micros/-nanos for p <= 3, <= 6, <= 9.
- Flink's ARRAY and MAP branches call the two-argument overload, which defaults to the legacy
  mapping: elements and map values are always derived with the legacy mapping. Kept as is.

The schema is returned as plain JSON data whose key order, and `to_avro_json`'s compact text,
equal what Avro Java's `Schema.toString()` prints for Flink's schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from keyguard.formats.avro_spec import valid_decimal, validate_avro
from keyguard.formats.avro_vocab import NAMED, PRIMITIVES, UNIT_PRECISION, full_name
from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.schema_identity import fingerprint as schema_fingerprint
from keyguard.formats.schema_identity import parsing_canonical_form
from keyguard.formats.schema_types import SchemaType, register_schema_type
from keyguard.formats.schemajson import check_depth, loads_schema
from keyguard.formats.types import (
    ArrayType,
    AvroOnlyType,
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    Field,
    FloatType,
    IntType,
    MapType,
    RowType,
    SmallIntType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
    TinyIntType,
)

#: Flink's record name when none is given.
DEFAULT_RECORD_NAME = "org.apache.flink.avro.generated.record"

AvroSchema = Any  # JSON data: a str (primitive), a dict (complex type) or a list (union)

_LEGACY_HINT = (
    "declare TIMESTAMP(3), or set timestamp_mapping.legacy=false to use Avro's "
    "local-timestamp types as Flink does with that option"
)


def to_avro_schema(
    data_type: DataType,
    *,
    record_name: str = DEFAULT_RECORD_NAME,
    namespace: str | None = None,
    legacy_timestamp_mapping: bool = True,
) -> AvroSchema:
    """The Avro schema Flink derives for `data_type` (usually a table's key or value row).

    `record_name` may be a full name (`ns.name`), as Flink's rowName; `namespace`, when given,
    is put in front of it.
    """
    if namespace:
        record_name = f"{namespace}.{record_name}"
    schema = _convert(data_type, record_name, legacy_timestamp_mapping, "", None)
    return schema


def to_avro_json(schema: AvroSchema) -> str:
    """Compact JSON text, as Avro Java's `Schema.toString()` prints it."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def _nullable(schema: AvroSchema, nullable: bool) -> AvroSchema:
    return ["null", schema] if nullable else schema


def _convert(
    t: DataType, row_name: str, legacy: bool, path: str, enclosing_ns: str | None
) -> AvroSchema:
    where = f"column '{path}' " if path else ""
    schema = _scalar_schema(t, legacy, where)
    if schema is None:
        schema = _nested_schema(t, row_name, legacy, path, enclosing_ns, where)
    return _nullable(schema, t.nullable)


def _nested_schema(t: DataType, row_name: str, legacy: bool, path: str,
                   enclosing_ns: str | None, where: str) -> AvroSchema:
    """The Avro schema of a row, a map or an array column."""
    if isinstance(t, RowType):
        return _record(t, row_name, legacy, path, enclosing_ns)
    if isinstance(t, MapType):
        if not isinstance(t.key, StringType):
            raise UnsupportedTypeError(
                f"{where}{t.sql()}: Avro maps have string keys only",
                hint="use MAP<STRING, ...> or an ARRAY of ROW<key, value>",
            )
        # Flink's MAP branch calls convertToSchema(valueType, rowName): legacy mapping always.
        values = _convert(t.value, row_name, True, f"{path}{{value}}", enclosing_ns)
        return {"type": "map", "values": values}
    if isinstance(t, ArrayType):
        # Flink's ARRAY branch calls convertToSchema(elementType, rowName): legacy mapping always.
        items = _convert(t.element, row_name, True, f"{path}[]", enclosing_ns)
        return {"type": "array", "items": items}
    raise UnsupportedTypeError(f"{where}{t.sql()}: no Avro type for this column type")


#: Column types written as an Avro primitive, tried in order.
_PRIMITIVE_SCHEMAS: tuple[tuple[type[DataType] | tuple[type[DataType], ...], str], ...] = (
    (BooleanType, "boolean"),
    ((TinyIntType, SmallIntType, IntType), "int"),
    (BigIntType, "long"),
    (FloatType, "float"),
    (DoubleType, "double"),
    (StringType, "string"),
    (BytesType, "bytes"),
)


def _scalar_schema(t: DataType, legacy: bool, where: str) -> AvroSchema | None:
    """The Avro schema of a column type that is neither a row, a map nor an array; None for
    those."""
    for types, primitive in _PRIMITIVE_SCHEMAS:
        if isinstance(t, types):
            return primitive
    if isinstance(t, DecimalType):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    if isinstance(t, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(t, TimeType):
        if t.precision > 3:
            raise UnsupportedTypeError(
                f"{where}{t.sql()}: Avro (as Flink derives it) supports TIME precision up to 3",
                hint="declare TIME(3) or less; Flink writes TIME as int time-millis",
            )
        return {"type": "int", "logicalType": "time-millis"}
    if isinstance(t, TimestampType):
        return _timestamp_schema(t, legacy, where)
    if isinstance(t, TimestampLtzType):
        if legacy:
            raise UnsupportedTypeError(
                f"{where}{t.sql()}: the legacy timestamp mapping (Flink's default) has no Avro "
                "type for TIMESTAMP_LTZ",
                hint="set timestamp_mapping.legacy=false to write timestamp-millis/-micros",
            )
        return {"type": "long", "logicalType": "timestamp-" + _unit(t.precision)}
    return None


def _timestamp_schema(t: TimestampType, legacy: bool, where: str) -> AvroSchema:
    if not legacy:
        return {"type": "long", "logicalType": "local-timestamp-" + _unit(t.precision)}
    if t.precision > 3:
        raise UnsupportedTypeError(
            f"{where}{t.sql()}: with the legacy timestamp mapping (Flink's default) Avro "
            f"supports TIMESTAMP precision up to 3",
            hint=_LEGACY_HINT,
        )
    return {"type": "long", "logicalType": "timestamp-millis"}


def _unit(precision: int) -> str:
    return "millis" if precision <= 3 else "micros" if precision <= 6 else "nanos"


def _split_name(full: str) -> tuple[str, str | None]:
    if "." in full:
        ns, name = full.rsplit(".", 1)
        return name, ns or None
    return full, None


def _record(
    t: RowType, row_name: str, legacy: bool, path: str, enclosing_ns: str | None
) -> dict[str, Any]:
    name, ns = _split_name(row_name)
    schema: dict[str, Any] = {"type": "record", "name": name}
    # Avro Java prints a namespace only where it differs from the enclosing one.
    if ns is not None and ns != enclosing_ns:
        schema["namespace"] = ns
    elif ns is None and enclosing_ns is not None:
        schema["namespace"] = ""
    fields = []
    for f in t.fields:
        sub_path = f"{path}.{f.name}" if path else f.name
        ftype = _convert(f.type, f"{row_name}_{f.name}", legacy, sub_path, ns)
        field: dict[str, Any] = {"name": f.name, "type": ftype}
        if f.type.nullable:
            field["default"] = None
        fields.append(field)
    schema["fields"] = fields
    return schema


# --------------------------------------------------------------------------------------------
# Avro schema -> row type (registered schemas)
# --------------------------------------------------------------------------------------------


_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def parse_avro(schema: str | AvroSchema, *, origin: str | None = None) -> AvroSchema:
    """JSON data of an Avro schema given as text or data; SchemaError when it is not valid.

    Valid means: JSON nested at most MAX_SCHEMA_DEPTH deep, the Avro specification
    (`keyguard.formats.avro_spec`), then fastavro's parser. `origin` (a file, a subject) starts the
    message of any error.
    """
    import fastavro

    where = origin or "not a valid Avro schema"
    if isinstance(schema, str):
        if _BARE_NAME.match(schema.strip()):
            # A bare type name ("string", "null") is valid Avro schema text too.
            data = schema.strip()
        else:
            data = loads_schema(schema, where)
    else:
        data = schema
        check_depth(data, where)
    prefix = f"{origin}: " if origin else ""
    try:
        validate_avro(data)
    except SchemaError as exc:
        raise SchemaError(f"{prefix}{exc.message}", hint=exc.hint) from None
    try:
        fastavro.parse_schema(data, _write_hint=False)
    except Exception as exc:  # fastavro raises several types for bad schemas
        raise SchemaError(f"{prefix}not a valid Avro schema: {exc}",
                          hint="fix the schema so that an Avro parser accepts it") from None
    return data


def expand_named(schema: AvroSchema) -> AvroSchema:
    """The schema with named-type references replaced by their definitions (fastavro's)."""
    from fastavro.schema import expand_schema

    return expand_schema(schema)


def from_avro_schema(
    schema: str | AvroSchema,
    *,
    legacy_timestamp_mapping: bool = True,
    avro_only: bool = False,
    validated: bool = False,
) -> DataType:
    """The row type Flink reads a registered Avro schema as (`convertToDataType`).

    Unions with null -> nullable, enum -> STRING, fixed -> BYTES, records -> ROW.
    Unions of several non-null types, and the null type alone, have no column type here.
    A record that refers to itself (directly or through other types) has no row type: an
    UnsupportedTypeError; a union of several non-null types a SchemaError. With `avro_only`
    (the guard's structural analysis), both become an AvroOnlyType instead. `validated`
    skips the validation of data already checked by `parse_avro`.
    """
    data = schema if validated else parse_avro(schema)
    try:
        return _Converter(legacy_timestamp_mapping, avro_only).convert(data, None, "")
    except (KeyError, TypeError, AttributeError) as exc:  # fastavro lets some gaps through
        raise SchemaError(f"not a valid Avro schema: missing or malformed {exc}") from None


def _is_null(s: AvroSchema) -> bool:
    return s == "null" or (isinstance(s, dict) and s.get("type") == "null")


class _Converter:
    """One conversion: named types seen so far, and the records being converted (recursion)."""

    def __init__(self, legacy: bool, avro_only: bool) -> None:
        self.legacy = legacy
        self.avro_only = avro_only
        self.named: dict[str, Any] = {}
        #: Full names of the records whose fields are being converted, outermost first.
        self.open: list[str] = []

    def convert(self, s: AvroSchema, ns: str | None, path: str) -> DataType:
        where = f"at '{path}' " if path else ""
        if isinstance(s, list):
            return self.union(s, ns, path, where)
        if isinstance(s, str):
            if s not in PRIMITIVES:
                return self.reference(s, ns, path)
            s = {"type": s}
        if not isinstance(s, dict):
            raise SchemaError(f"not an Avro schema {where}: {s!r}")
        typ = s.get("type")
        if isinstance(typ, (list, dict)):
            return self.convert(typ, ns, path)
        if typ in NAMED:
            return self.named_type(s, ns, path)
        if typ == "array":
            return ArrayType(element=self.convert(s["items"], ns, f"{path}[]"), nullable=False)
        if typ == "map":
            return MapType(key=StringType(nullable=False),
                           value=self.convert(s["values"], ns, f"{path}{{value}}"),
                           nullable=False)
        primitive = _primitive_type(s, self.legacy)
        if primitive is not None:
            return primitive
        if typ == "null":
            raise SchemaError(f"the Avro null type {where}has no column type")
        if isinstance(typ, str):
            return self.reference(typ, ns, path)
        raise SchemaError(f"unsupported Avro type {typ!r} {where}".rstrip())

    def union(self, s: list[Any], ns: str | None, path: str, where: str) -> DataType:
        """A nullable column of ["null", T]; any other union has no column type."""
        branches = [b for b in s if not _is_null(b)]
        if len(branches) == 1 and len(s) <= 2:
            return self.convert(branches[0], ns, path).with_nullable(len(s) == 2)
        if self.avro_only and branches:
            return AvroOnlyType(what=f"union {_short_json(s)}",
                                nullable=len(branches) < len(s))
        raise SchemaError(
            f"Avro union {where}{_short_json(s)} has no column type",
            hint="only [\"null\", T] unions map to a nullable column, as in Flink",
        )

    def named_type(self, s: dict[str, Any], ns: str | None, path: str) -> DataType:
        """A record, enum or fixed defined here, remembered by its full name."""
        name = s["name"]
        own_ns = s.get("namespace", ns) if "." not in name else name.rsplit(".", 1)[0]
        full = full_name(name, own_ns)
        self.named[full] = s
        typ = s.get("type")
        if typ in ("record", "error"):
            return self.record(s, full, own_ns, path)
        if typ == "enum":
            return StringType(nullable=False)
        return _bytes_type(s)

    def record(self, s: dict[str, Any], full: str, own_ns: str | None, path: str) -> RowType:
        self.open.append(full)
        fields = tuple(
            Field(
                f["name"],
                self.convert(f["type"], own_ns or None,
                             f"{path}.{f['name']}" if path else f["name"]),
                f.get("doc"),
            )
            for f in s["fields"]
        )
        self.open.pop()
        return RowType(fields=fields, nullable=False)

    def reference(self, name: str, ns: str | None, path: str) -> DataType:
        """A named type used by name: converted again, or a recursion back to an open record."""
        full = name if "." in name or ns is None else f"{ns}.{name}"
        if full not in self.named and name in self.named:
            full = name
        ref = self.named.get(full)
        if ref is None:
            raise SchemaError(f"unknown Avro type name {name!r} at '{path}'")
        if full in self.open:
            if self.avro_only:
                return AvroOnlyType(what=f"recursive reference to {full}", nullable=False)
            raise UnsupportedTypeError(
                f"column '{path}' refers back to the Avro record {full!r}: a recursive schema "
                "has no Flink or Spark row type, so keyguard cannot encode or decode it",
                hint="the guard (check, diff) judges recursive schemas; encoding needs a "
                "schema without recursion (bound the depth with distinct record types)",
            )
        ref_ns = full.rpartition(".")[0] or None
        return self.convert(ref, ref_ns, path)


def _short_json(s: Any) -> str:
    text = json.dumps(s)
    return text if len(text) <= 120 else text[:117] + "..."


def _bytes_type(s: Mapping[str, Any]) -> DataType:
    """bytes or fixed: DECIMAL when a valid decimal logical type says so."""
    if s.get("logicalType") == "decimal" and valid_decimal(s):
        return DecimalType(precision=s["precision"], scale=s.get("scale", 0), nullable=False)
    return BytesType(nullable=False)


def _int_type(logical: str | None) -> DataType:
    if logical == "date":
        return DateType(nullable=False)
    if logical == "time-millis":
        return TimeType(precision=3, nullable=False)
    return IntType(nullable=False)


def _primitive_type(s: Mapping[str, Any], legacy: bool) -> DataType | None:
    """The column type of a primitive Avro type other than null, or None."""
    typ, logical = s.get("type"), s.get("logicalType")
    if typ == "bytes":
        return _bytes_type(s)
    if typ == "int":
        return _int_type(logical)
    if typ == "long":
        return _long_type(logical, legacy)
    plain = _PLAIN_TYPES.get(typ) if isinstance(typ, str) else None
    return None if plain is None else plain(nullable=False)


_PLAIN_TYPES: dict[str, type[DataType]] = {
    "string": StringType, "float": FloatType, "double": DoubleType, "boolean": BooleanType}


def _long_type(logical: str | None, legacy: bool) -> DataType:
    if logical:
        kind, _, unit = logical.rpartition("-")
        p = UNIT_PRECISION.get(unit)
        if p is not None:
            if kind == "time":
                return TimeType(precision=p, nullable=False)
            if kind == "local-timestamp":
                return TimestampType(precision=p, nullable=False)
            if kind == "timestamp":
                cls = TimestampType if legacy else TimestampLtzType
                return cls(precision=p, nullable=False)
    return BigIntType(nullable=False)


# --------------------------------------------------------------------------------------------
# Canonical form
# --------------------------------------------------------------------------------------------


def canonical_form(schema: str | AvroSchema) -> str:
    """Avro's Parsing Canonical Form: equal for schemas that read and write the same bytes."""
    return parsing_canonical_form(parse_avro(schema))


def fingerprint(schema: str | AvroSchema, algorithm: str = "CRC-64-AVRO") -> str:
    """Hex fingerprint of the canonical form (CRC-64-AVRO, MD5 or SHA-256)."""
    return schema_fingerprint(parse_avro(schema), algorithm)


def record_full_name(schema: str | AvroSchema) -> str | None:
    """`namespace.name` of a record schema (or of the record in a nullable union), else None."""
    data = parse_avro(schema)
    if isinstance(data, list):
        data = next((b for b in data if isinstance(b, Mapping)), None)
    if not isinstance(data, Mapping) or data.get("type") not in NAMED:
        return None
    name = str(data["name"])
    ns = data.get("namespace")
    return name if "." in name or not ns else f"{ns}.{name}"


def _row_type(data: object, avro_only: bool) -> DataType:
    return from_avro_schema(data, avro_only=avro_only, validated=True)  # type: ignore[arg-type]


#: Found by `keyguard.formats.schema_types.schema_type("AVRO")` (its line in
#: `keyguard.formats.catalog.SCHEMA_TYPES`).
SCHEMA_TYPE = register_schema_type(SchemaType(
    "AVRO", lambda text, origin: parse_avro(text, origin=origin), _row_type))
