"""Row type <-> JSON Schema (draft-07), in the shape Confluent's JSON Schema serde registers.

`to_json_schema` follows Confluent's Kafka Connect converter (`JsonSchemaData.fromConnectSchema`)
so schemas look like those Connect writes and Confluent tools read them back to the same types:

- a row is `{"type":"object","properties":{...}}`, properties in column order, each with its
  `connect.index`; NOT NULL columns are also listed in `required` (Connect omits `required`; it
  is added so that validation rejects a missing key column);
- a nullable type is `{"oneOf":[{"type":"null"}, T]}` (null first), never `"type":[...]`;
- integers carry `connect.type` int8/int16/int32/int64, FLOAT/DOUBLE float32/float64, BYTES is
  a string with `connect.type` bytes (and `contentEncoding` base64), DECIMAL is a number titled
  `org.apache.kafka.connect.data.Decimal` with its scale and precision in `connect.parameters`,
  MAP<STRING, V> an object with `additionalProperties` and `connect.type` map.

The instances it describes are Flink's json format texts, so temporal types are strings, not
Connect's integer logical types: DATE has `format: date`, TIMESTAMP_LTZ in ISO-8601 form
`format: date-time`; TIME and TIMESTAMP (no offset, so not RFC 3339) get a `pattern`. Types
that standard keywords cannot tell apart keep their Flink type in a `flink.type` annotation,
which Confluent passes through untouched.

`from_json_schema` reads registered schemas back, best effort: local `$ref`s, `type` lists and
`oneOf`/`anyOf` with null are understood; anything without a single row meaning (a union of two
non-null types, an external `$ref`, an untyped schema) is a SchemaError naming the path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.schema_types import SchemaType, register_schema_type
from keyguard.formats.schemajson import loads_schema
from keyguard.formats.sqltypes import parse_type
from keyguard.formats.types import (
    ArrayType,
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

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DECIMAL_TITLE = "org.apache.kafka.connect.data.Decimal"
PRECISION_PARAM = "connect.decimal.precision"
FLINK_TYPE = "flink.type"
TimestampStandard = Literal["SQL", "ISO-8601"]

_CONNECT_INTS: dict[type[DataType], str] = {
    TinyIntType: "int8", SmallIntType: "int16", IntType: "int32", BigIntType: "int64",
}
_INTS_BY_CONNECT = {v: k for k, v in _CONNECT_INTS.items()}
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"


def to_json_schema(
    row_type: RowType,
    *,
    title: str | None = None,
    timestamp_format: TimestampStandard = "SQL",
) -> dict[str, Any]:
    """The JSON Schema of Flink json rows of `row_type` (json.timestamp-format.standard)."""
    schema: dict[str, Any] = {"$schema": DRAFT_07}
    if title:
        schema["title"] = title
    schema.update(_row(row_type, timestamp_format, path=""))
    return schema


def _row(t: RowType, ts: TimestampStandard, path: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for i, f in enumerate(t.fields):
        sub = _nullable(f.type, ts, f"{path}.{f.name}" if path else f.name)
        if f.description:
            target = sub["oneOf"][1] if "oneOf" in sub else sub
            target["description"] = f.description
        props[f.name] = {**sub, "connect.index": i}
    out: dict[str, Any] = {"type": "object", "properties": props}
    required = [f.name for f in t.fields if not f.type.nullable]
    if required:
        out["required"] = required
    return out


def _nullable(t: DataType, ts: TimestampStandard, path: str) -> dict[str, Any]:
    body = _type(t, ts, path)
    return {"oneOf": [{"type": "null"}, body]} if t.nullable else body


def _type(t: DataType, ts: TimestampStandard, path: str) -> dict[str, Any]:
    flink = {FLINK_TYPE: t.with_nullable(True).sql()}
    if isinstance(t, StringType):
        return {"type": "string"}
    if isinstance(t, BooleanType):
        return {"type": "boolean"}
    if type(t) in _CONNECT_INTS:
        return {"type": "integer", "connect.type": _CONNECT_INTS[type(t)]}
    if isinstance(t, FloatType):
        return {"type": "number", "connect.type": "float32"}
    if isinstance(t, DoubleType):
        return {"type": "number", "connect.type": "float64"}
    if isinstance(t, DecimalType):
        return {"type": "number", "title": DECIMAL_TITLE, "connect.version": 1,
                "connect.type": "bytes",
                "connect.parameters": {"scale": str(t.scale),
                                       PRECISION_PARAM: str(t.precision)}}
    if isinstance(t, BytesType):
        return {"type": "string", "contentEncoding": "base64", "connect.type": "bytes"}
    if isinstance(t, DateType):
        return {"type": "string", "format": "date"}
    if isinstance(t, TimeType):
        return {"type": "string", "pattern": f"^{_TIME}$", **flink}
    if isinstance(t, TimestampType):
        sep = "T" if ts == "ISO-8601" else " "
        return {"type": "string", "pattern": f"^{_DATE}{sep}{_TIME}$",
                **flink}
    if isinstance(t, TimestampLtzType):
        if ts == "ISO-8601":
            return {"type": "string", "format": "date-time", **flink}
        return {"type": "string", "pattern": f"^{_DATE} {_TIME}Z$",
                **flink}
    if isinstance(t, ArrayType):
        return {"type": "array", "items": _nullable(t.element, ts, f"{path}[]")}
    if isinstance(t, MapType):
        if not isinstance(t.key, StringType):
            raise UnsupportedTypeError(
                f"column '{path}': JSON objects have string keys, so {t.sql()} has no JSON "
                "Schema (Flink's json format rejects non-string map keys too)",
                hint="use MAP<STRING, ...> or an ARRAY of ROW<key, value>",
            )
        return {"type": "object", "additionalProperties": _nullable(t.value, ts, f"{path}{{}}"),
                "connect.type": "map"}
    if isinstance(t, RowType):
        return _row(t, ts, path)
    raise UnsupportedTypeError(f"column '{path}': no JSON Schema for {t.sql()}")


# --------------------------------------------------------------------------------------------
# Validation against the metaschema
# --------------------------------------------------------------------------------------------

#: The drafts a `$schema` may declare; without one, draft-07, as Confluent's registry assumes.
DRAFTS = ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12")


def validate_json_schema(schema: Any) -> None:
    """SchemaError unless `schema` is a JSON Schema valid against the metaschema it declares.

    The root must be an object or a boolean. `$schema` picks the draft (a draft-04 schema with a
    boolean `exclusiveMaximum` is valid, a 2020-12 one is not); an unknown `$schema` is an
    error, since nothing could check the schema against it. The message names the JSON pointer
    of the offending keyword and the rule it breaks.
    """
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(
            f"invalid JSON Schema at /: expected an object or a boolean, got "
            f"{_json_kind(schema)}",
            hint="a JSON Schema document is a JSON object (or true or false)",
        )
    # Imported here: jsonschema costs 0.2 s, and an Avro-only run never needs it.
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError as MetaschemaError
    from jsonschema.validators import validator_for

    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and "$schema" in schema:
        unknown = object()
        cls: Any = unknown
        if isinstance(declared, str):
            # Drafts 3 to 7 are known by their http:// URIs; https:// names the same draft.
            uri = declared.strip()
            if uri.startswith("https://json-schema.org/draft-0"):
                uri = "http://" + uri.removeprefix("https://")
            cls = validator_for({"$schema": uri}, default=unknown)
        if cls is unknown:
            raise SchemaError(
                f"invalid JSON Schema at /$schema: {declared!r} is not a JSON Schema draft "
                "keyguard knows",
                hint="declare one of the drafts' metaschema URIs ("
                + ", ".join(DRAFTS) + "), e.g. " + DRAFT_07 + ", or omit $schema (draft-07)",
            )
    else:
        cls = Draft7Validator
    try:
        cls.check_schema(schema)
    except MetaschemaError as err:
        where = "/" + "/".join(str(p) for p in err.absolute_path)
        draft = cls.__name__.removesuffix("Validator")
        hint = "fix the schema so that it validates against the metaschema of its draft"
        if declared is None and isinstance(err.instance, bool) and err.absolute_path and \
                err.absolute_path[-1] in ("exclusiveMaximum", "exclusiveMinimum"):
            # Confluent reads a schema without $schema as draft-07 too, and refuses this one.
            hint = (f"a boolean {err.absolute_path[-1]} is draft-04; without $schema the schema "
                    f'is draft-07: declare "$schema": "{DRAFT_04}" or give the bound as a number')
        raise SchemaError(
            f"invalid JSON Schema at {where}: {err.message} ({draft} metaschema, rule "
            f"'{err.validator}')",
            hint=hint,
        ) from None


def _json_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, (int, float)):
        return f"the number {v}"
    return type(v).__name__


# --------------------------------------------------------------------------------------------
# JSON Schema -> row type
# --------------------------------------------------------------------------------------------


def from_json_schema(schema: Mapping[str, Any]) -> RowType:
    """The row type of a registered JSON Schema whose root is an object."""
    reader = _Reader(schema)
    t, _ = reader.read(schema, "$")
    if not isinstance(t, RowType):
        raise SchemaError(f"$: the schema's root is {t.sql()}, not an object with properties",
                          hint="a topic's key or value schema must describe a JSON object")
    return t.not_null()


class _Reader:
    def __init__(self, root: Mapping[str, Any]):
        self.root = root

    def resolve(self, s: Mapping[str, Any], path: str) -> Mapping[str, Any]:
        seen = set()
        while "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise SchemaError(f"{path}: $ref {ref!r} points outside this schema",
                                  hint="inline the referenced schema or resolve references "
                                  "before checking")
            if ref in seen:
                raise SchemaError(f"{path}: recursive $ref {ref!r} has no row type")
            seen.add(ref)
            node: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, Mapping) or part not in node:
                    raise SchemaError(f"{path}: $ref {ref!r} does not resolve")
                node = node[part]
            s = node
        return s

    def read(self, s: Any, path: str) -> tuple[DataType, bool]:
        """(type, nullable) of a subschema; the type itself is marked nullable accordingly."""
        if s is True or s == {}:
            raise SchemaError(f"{path}: the schema accepts any value, which has no column type")
        if not isinstance(s, Mapping):
            raise SchemaError(f"{path}: expected a schema object, got {s!r}")
        s = self.resolve(s, path)
        for key in ("oneOf", "anyOf"):
            if key in s:
                return self._union(s[key], path, key)
        if "allOf" in s:
            if len(s["allOf"]) != 1:
                raise SchemaError(f"{path}: allOf of {len(s['allOf'])} schemas has no row type")
            return self.read(s["allOf"][0], f"{path}.allOf[0]")
        typ = s.get("type")
        nullable = False
        if isinstance(typ, list):
            non_null = [x for x in typ if x != "null"]
            nullable = len(non_null) < len(typ)
            if len(non_null) != 1:
                raise SchemaError(f"{path}: type {typ} is a union of {len(non_null)} non-null "
                                  "types; a column has one type")
            typ = non_null[0]
        if typ is None:
            if "properties" in s:
                typ = "object"
            elif "enum" in s and all(isinstance(e, str) for e in s["enum"]):
                typ = "string"
            else:
                raise SchemaError(f"{path}: schema without a 'type'")
        t = self._typed(s, typ, path)
        return t.with_nullable(nullable), nullable

    def _union(self, subs: Any, path: str, key: str) -> tuple[DataType, bool]:
        non_null = []
        nullable = False
        for i, sub in enumerate(subs):
            sub_r = self.resolve(sub, f"{path}.{key}[{i}]") if isinstance(sub, Mapping) else sub
            if isinstance(sub_r, Mapping) and sub_r.get("type") == "null":
                nullable = True
            else:
                non_null.append((i, sub))
        if len(non_null) != 1:
            raise SchemaError(
                f"{path}: {key} of {len(non_null)} non-null schemas has no single column type",
                hint="keyguard maps only {\"oneOf\": [{\"type\": \"null\"}, T]} to a nullable T",
            )
        i, sub = non_null[0]
        t, inner_nullable = self.read(sub, f"{path}.{key}[{i}]")
        nullable = nullable or inner_nullable
        return t.with_nullable(nullable), nullable

    def _typed(self, s: Mapping[str, Any], typ: str, path: str) -> DataType:
        annotated = s.get(FLINK_TYPE)
        if isinstance(annotated, str):
            try:
                return parse_type(annotated)
            except SchemaError as exc:
                raise SchemaError(f"{path}: bad {FLINK_TYPE} {annotated!r}: {exc.message}") \
                    from None
        if typ == "boolean":
            return BooleanType()
        if typ == "integer":
            return _integer_type(s, path)
        if typ == "number":
            return _number_type(s, path)
        if typ == "string":
            return _string_type(s)
        if typ == "array":
            return self._array(s, path)
        if typ == "object":
            return self._object_or_map(s, path)
        raise SchemaError(f"{path}: type {typ!r} has no column type")

    def _array(self, s: Mapping[str, Any], path: str) -> ArrayType:
        items = s.get("items")
        if items is None or isinstance(items, list):
            raise SchemaError(f"{path}: array without a single 'items' schema",
                              hint="tuple-typed arrays have no column type")
        element, _ = self.read(items, f"{path}[]")
        return ArrayType(element=element)

    def _object_or_map(self, s: Mapping[str, Any], path: str) -> DataType:
        """A ROW of the properties; a MAP when there are none, only additionalProperties."""
        props = s.get("properties")
        extra = s.get("additionalProperties")
        if not props and isinstance(extra, Mapping) and extra:
            value, _ = self.read(extra, f"{path}{{}}")
            return MapType(key=StringType(), value=value)
        return self._object(s, props or {}, path)

    def _object(self, s: Mapping[str, Any], props: Mapping[str, Any], path: str) -> RowType:
        if not props:
            raise SchemaError(f"{path}: object without properties has no columns")
        required = s.get("required")
        entries = []
        for pos, (name, sub) in enumerate(props.items()):
            index = sub.get("connect.index", pos) if isinstance(sub, Mapping) else pos
            entries.append((index if isinstance(index, int) else pos, pos, name, sub))
        fields = []
        for _, _, name, sub in sorted(entries):
            t, nullable = self.read(sub, f"{path}.{name}")
            # Connect omits `required` (absent = all required); with it, absent = optional.
            optional = nullable or (required is not None and name not in required)
            description = self.resolve(sub, path).get("description") \
                if isinstance(sub, Mapping) else None
            fields.append(Field(name, t.with_nullable(optional),
                                description if isinstance(description, str) else None))
        return RowType(fields=tuple(fields), nullable=False)


def _integer_type(s: Mapping[str, Any], path: str) -> DataType:
    connect = s.get("connect.type")
    if connect in (None, "int64"):
        return BigIntType()
    if connect in _INTS_BY_CONNECT:
        return _INTS_BY_CONNECT[connect]()
    raise SchemaError(f"{path}: integer with connect.type {connect!r}")


def _number_type(s: Mapping[str, Any], path: str) -> DataType:
    """DECIMAL as Connect titles it; else FLOAT, an integer type or DOUBLE by connect.type."""
    connect = s.get("connect.type")
    if s.get("title") == DECIMAL_TITLE:
        params = s.get("connect.parameters") or {}
        try:
            scale = int(params.get("scale", 0))
            precision = int(params.get(PRECISION_PARAM, 38))
        except (TypeError, ValueError):
            raise SchemaError(f"{path}: bad Decimal parameters {params!r}") from None
        return DecimalType(precision=precision, scale=scale)
    if connect == "float32":
        return FloatType()
    if connect in _INTS_BY_CONNECT:
        return _INTS_BY_CONNECT[connect]()
    return DoubleType()


def _string_type(s: Mapping[str, Any]) -> DataType:
    """BYTES when base64, a time type by its format, else STRING."""
    if s.get("connect.type") == "bytes" or s.get("contentEncoding") == "base64":
        return BytesType()
    fmt = s.get("format")
    if fmt == "date":
        return DateType()
    if fmt == "date-time":
        return TimestampLtzType()
    if fmt == "time":
        return TimeType()
    return StringType()


def _parse(text: str, origin: str) -> object:
    data = loads_schema(text, origin)
    validate_json_schema(data)
    return data


def _row_type(doc: object, avro_only: bool) -> DataType:
    if not isinstance(doc, dict):
        raise SchemaError("a JSON Schema for a key or value must be an object",
                          hint="describe the key or value as {\"type\": \"object\", "
                          "\"properties\": {...}}")
    return from_json_schema(doc)


#: Found by `keyguard.formats.schema_types.schema_type("JSON")` (its line in
#: `keyguard.formats.catalog.SCHEMA_TYPES`).
SCHEMA_TYPE = register_schema_type(SchemaType("JSON", _parse, _row_type))
