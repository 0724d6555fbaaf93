"""Key/value projection with the semantics of Flink's upsert-kafka connector.

The primary key, in declaration order, makes the key row; its columns are NOT NULL. With
`key.fields-prefix` the table's key columns carry the prefix and the key format sees the names
without it. `value.fields-include` is ALL (every column, key columns included) or EXCEPT_KEY.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from keyguard.formats.errors import InvalidOptionError, NullKeyError, SchemaError
from keyguard.formats.table_options import ALL, EXCEPT_KEY
from keyguard.formats.types import Field, RowType


def parse_primary_key(spec: str | Sequence[str]) -> tuple[str, ...]:
    """`"b, a"` or `["b", "a"]` -> `("b", "a")`, declaration order kept."""
    cols = [c.strip() for c in spec.split(",")] if isinstance(spec, str) else list(spec)
    if any(not c for c in cols) and any(cols):
        raise InvalidOptionError(
            f"option 'primary-key' {spec!r} has an empty column name",
            hint="name the key columns, comma-separated, e.g. primary-key=region,user_id")
    cols = [c for c in cols if c]
    if not cols:
        raise InvalidOptionError(
            "option 'primary-key' is empty: an upsert topic needs a primary key",
            hint="name the key columns in declaration order, e.g. primary-key=region,user_id",
        )
    dupes = sorted({c for c in cols if cols.count(c) > 1})
    if dupes:
        raise InvalidOptionError(f"option 'primary-key' lists {', '.join(dupes)} twice")
    return tuple(cols)


@dataclass(frozen=True)
class UpsertLayout:
    """How a table's columns split into the key row and the value row."""

    table: RowType
    primary_key: tuple[str, ...]
    key_type: RowType
    value_type: RowType
    key_fields_prefix: str = ""
    value_fields_include: str = ALL

    @property
    def value_columns(self) -> tuple[str, ...]:
        """Table column names that go into the value, in value order."""
        return tuple(f.name for f in self.value_type.fields)

    def key_row(self, table_row: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
        """The key row of a table row; a null key column raises NullKeyError."""
        out = {}
        prefix = len(self.key_fields_prefix)
        for col in self.primary_key:
            v = table_row.get(col)
            if v is None:
                raise NullKeyError(
                    f"{where + ': ' if where else ''}primary-key column '{col}' is null",
                    hint="every primary-key column must have a value; filter or fill nulls "
                    "before writing",
                )
            out[col[prefix:]] = v
        return out

    def value_row(self, table_row: Mapping[str, Any]) -> dict[str, Any]:
        return {name: table_row.get(name) for name in self.value_columns}

    def table_row(
        self, key_row: Mapping[str, Any], value_row: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Reassemble a table row from decoded key and value rows (value None: a tombstone)."""
        prefix = self.key_fields_prefix
        out: dict[str, Any] = {f.name: None for f in self.table.fields}
        if value_row is not None:
            out.update({k: value_row.get(k) for k in self.value_columns})
        for col in self.primary_key:
            out[col] = key_row.get(col[len(prefix):])
        return out


def project(
    table: RowType,
    primary_key: str | Sequence[str],
    *,
    key_fields_prefix: str = "",
    value_fields_include: str = ALL,
) -> UpsertLayout:
    """Split `table` into key and value row types as Flink's upsert-kafka does."""
    pk = parse_primary_key(primary_key)
    include = value_fields_include.upper()
    if include not in (ALL, EXCEPT_KEY):
        raise InvalidOptionError(
            f"option 'value.fields-include' must be ALL or EXCEPT_KEY, got {value_fields_include!r}"
        )
    missing = [c for c in pk if c not in table.names]
    if missing:
        raise SchemaError(
            f"primary-key column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"not in the table",
            hint="the columns are: " + ", ".join(table.names),
        )
    if key_fields_prefix:
        if include == ALL:
            raise InvalidOptionError(
                "a 'key.fields-prefix' is not allowed with 'value.fields-include' = ALL",
                hint="set value.fields-include=EXCEPT_KEY to avoid field overlaps, as Flink "
                "requires",
            )
        bad = [c for c in pk if not c.startswith(key_fields_prefix)]
        if bad:
            raise InvalidOptionError(
                f"primary-key column{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
                f"do not start with key.fields-prefix {key_fields_prefix!r}",
                hint="with a prefix, key columns are named <prefix><field> in the table",
            )
    # Primary-key columns are NOT NULL, in the table and wherever they appear.
    fields = tuple(
        Field(f.name, f.type.not_null() if f.name in pk else f.type, f.description)
        for f in table.fields
    )
    table = RowType(fields=fields, nullable=table.nullable)
    by_name = {f.name: f for f in fields}
    key_type = RowType(
        fields=tuple(
            Field(c[len(key_fields_prefix):], by_name[c].type, by_name[c].description)
            for c in pk
        ),
        nullable=False,
    )
    value_type = RowType(
        fields=tuple(f for f in fields if include == ALL or f.name not in pk), nullable=False
    )
    return UpsertLayout(table, pk, key_type, value_type, key_fields_prefix, include)
