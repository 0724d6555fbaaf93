"""The Avro vocabulary, declared once: type names, named types, logical types, promotions.

Everything here is the Avro specification's (1.11/1.12), not keyguard's: the schema parser
(`keyguard.formats.avro_spec`), the Flink mapping (`keyguard.formats.avro_schema`), the encoders
(`keyguard.formats.avro_format`, `keyguard.formats.avro_vector`), schema identity
(`keyguard.formats.schema_identity`), references (`keyguard.formats.registry.references`) and the
guard's walkers (`keyguard.guard.compat.avro`,
`keyguard.guard.keys.avro`) all read these names from here.
"""

from __future__ import annotations

#: The primitive type names.
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
#: The named types (`error` is a record that Avro IDL calls an error).
NAMED = frozenset({"record", "error", "enum", "fixed"})
#: The complex types that are neither named nor unions (a union is a JSON array).
COMPLEX = frozenset({"array", "map"})
#: Every type name a schema may give as `type` (besides a named type's own name).
KNOWN_TYPES = PRIMITIVES | NAMED | COMPLEX

#: A record field's sort orders.
ORDERS = ("ascending", "descending", "ignore")

#: Schema resolution's promotions: reader type -> the writer types it reads.
PROMOTIONS: dict[str, frozenset[str]] = {
    "long": frozenset({"int"}),
    "float": frozenset({"int", "long"}),
    "double": frozenset({"int", "long", "float"}),
    "bytes": frozenset({"string"}),
    "string": frozenset({"bytes"}),
}

#: The instants since the epoch (UTC), by unit.
TIMESTAMPS = ("timestamp-millis", "timestamp-micros", "timestamp-nanos")
#: The local (zone-less) date-times, by unit.
LOCAL_TIMESTAMPS = ("local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos")
#: Times of day, by unit.
TIMES = ("time-millis", "time-micros")
#: The digits of a second each time unit keeps (the suffix of the logical type's name).
UNIT_PRECISION = {"millis": 3, "micros": 6, "nanos": 9}
#: Every logical type that counts a time unit (its value changes meaning with the unit).
TIME_LOGICAL_TYPES = frozenset(TIMESTAMPS + LOCAL_TIMESTAMPS + TIMES)

#: Each logical type and the base types it may annotate (else the annotation is ignored).
LOGICAL_TYPES: dict[str, frozenset[str]] = {
    "decimal": frozenset({"bytes", "fixed"}),
    "uuid": frozenset({"string", "fixed"}),
    "date": frozenset({"int"}),
    "time-millis": frozenset({"int"}),
    "time-micros": frozenset({"long"}),
    **{t: frozenset({"long"}) for t in TIMESTAMPS + LOCAL_TIMESTAMPS},
    "duration": frozenset({"fixed"}),
}


def full_name(name: str, namespace: str | None) -> str:
    """A name as the specification resolves it: dotted names are full, else in `namespace`."""
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"
