"""Whose compatibility rules the checkers follow where the schema registries disagree.

keyguard follows Confluent Schema Registry by default. Karapace, Apicurio and Redpanda answer a
few changes differently; a user whose registry is one of them can have the gate follow it
(`--rules-of`, TOML `rules-of`). Each difference is one named switch below, read by the checker
it concerns; everything else stays Confluent's. `known_differences.json` records, per
conformance case, which choice makes it agree.
"""

from __future__ import annotations

from typing import Final

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.immutable import Value


class RegistryRules(Value):
    """One registry's answers where they differ from Confluent's (all off: Confluent)."""

    __slots__ = ("allof_read_by_sum_type", "boolean_schemas_as_karapace", "const_is_one_value_enum",
                 "draft_from_content", "name", "package_change_compatible",
                 "protolock_names_numbers_rpcs", "required_undeclared", "string_annotations",
                 "title")
    FIELDS = ("name", "title", "boolean_schemas_as_karapace", "string_annotations",
              "required_undeclared", "const_is_one_value_enum", "draft_from_content",
              "allof_read_by_sum_type", "package_change_compatible", "protolock_names_numbers_rpcs")
    name: Final[str]
    title: Final[str]
    #: JSON Schema, Karapace (`compatibility/jsonschema/checks.py`): `true` or `{}` reads only
    #: object schemas, a `false` writer is read only by a boolean schema, and `true` -> `false`
    #: passes. Confluent's `SchemaDiff.compare` lets an EmptySchema read anything and anything
    #: read a FalseSchema writer, and calls `true` -> `false` TYPE_CHANGED.
    boolean_schemas_as_karapace: Final[bool]
    #: JSON Schema, Apicurio (`StringSchemaDiffVisitor`): these string keywords may not appear
    #: or change in the reader. Confluent's StringSchemaDiff compares none of them.
    string_annotations: Final[tuple[str, ...]]
    #: JSON Schema, Apicurio (`ObjectSchemaDiffVisitor`): a name newly in the reader's
    #: `required` is incompatible even when `properties` does not declare it; Confluent's
    #: `compareRequired` looks at declared properties only.
    required_undeclared: Final[bool]
    #: JSON Schema, Apicurio: `const: x` and `enum: [x]` are one schema; Confluent loads a
    #: ConstSchema and an EnumSchema and calls the change TYPE_CHANGED.
    const_is_one_value_enum: Final[bool]
    #: JSON Schema, Redpanda (`pandaproxy/schema_registry/json.cc`) infers the draft of a
    #: schema without `$schema` from its content; here: the first draft whose metaschema
    #: accepts it, draft-07 first (so draft-04's boolean bounds read as draft-04). Confluent
    #: always reads it as draft-07.
    draft_from_content: Final[bool]
    #: JSON Schema, Redpanda (`is_positive_combinator_superset`): an `allOf` writer is read by
    #: a one-branch `oneOf` reader, and by an `anyOf` with fewer branches, when branches match;
    #: Confluent calls both COMBINED_TYPE_CHANGED or SUM_TYPE_NARROWED.
    allof_read_by_sum_type: Final[bool]
    #: Protobuf, Karapace (its `protobuf` checker): a package change is compatible;
    #: Confluent removed it from `SchemaDiff.COMPATIBLE_CHANGES`.
    package_change_compatible: Final[bool]
    #: Protobuf, Apicurio (protolock's NoChangingFieldNames, NoChangingFieldIDs,
    #: NoChangingRPCSignature): a field keeps its name and its number, an rpc its request and
    #: response types. Confluent matches fields by number, allows renames and ignores services.
    protolock_names_numbers_rpcs: Final[bool]

    def __init__(self, name: str, title: str, boolean_schemas_as_karapace: bool = False,
                 string_annotations: tuple[str, ...] = (), required_undeclared: bool = False,
                 const_is_one_value_enum: bool = False, draft_from_content: bool = False,
                 allof_read_by_sum_type: bool = False,
                 package_change_compatible: bool = False,
                 protolock_names_numbers_rpcs: bool = False) -> None:
        self.name = name
        self.title = title
        self.boolean_schemas_as_karapace = boolean_schemas_as_karapace
        self.string_annotations = string_annotations
        self.required_undeclared = required_undeclared
        self.const_is_one_value_enum = const_is_one_value_enum
        self.draft_from_content = draft_from_content
        self.allof_read_by_sum_type = allof_read_by_sum_type
        self.package_change_compatible = package_change_compatible
        self.protolock_names_numbers_rpcs = protolock_names_numbers_rpcs

    def __str__(self) -> str:
        return f"{self.title}'s rules"


CONFLUENT = RegistryRules("confluent", "Confluent")
KARAPACE = RegistryRules("karapace", "Karapace", boolean_schemas_as_karapace=True,
                         package_change_compatible=True)
APICURIO = RegistryRules("apicurio", "Apicurio",
                         string_annotations=("format", "contentEncoding", "contentMediaType"),
                         required_undeclared=True, const_is_one_value_enum=True,
                         protolock_names_numbers_rpcs=True)
REDPANDA = RegistryRules("redpanda", "Redpanda", draft_from_content=True,
                         allof_read_by_sum_type=True)

#: Every choice, by the name `--rules-of` and `rules-of` take.
RULES_OF: dict[str, RegistryRules] = {r.name: r for r in (CONFLUENT, APICURIO, KARAPACE,
                                                          REDPANDA)}


def rules_of(choice: str | RegistryRules | None) -> RegistryRules:
    """The rules named `choice` (any case; None: Confluent's), or an InvalidOptionError
    listing the accepted names."""
    if isinstance(choice, RegistryRules):
        return choice
    if choice is None:
        return CONFLUENT
    found = RULES_OF.get(choice.strip().lower()) if isinstance(choice, str) else None
    if found is None:
        raise InvalidOptionError(f"unknown registry rules {choice!r}",
                                 hint=f"use one of {', '.join(RULES_OF)}")
    return found
