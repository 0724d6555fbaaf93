"""The guard's catalog: key-rule families, compatibility checkers, report renderers and
commands, each name written out with the module that declares it.

Modules are imported when a name is first asked for (a text report never loads junit's XML, an
Avro check never the JSON Schema checker), never found by naming convention: adding one is its
module and one line here, and a name not listed is an error that lists those that are. The
formats, their frames and schema types are the formats layer's catalog
(`keyguard.formats.catalog`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Key families (`FormatFactory.key_family`) -> the module with their key-byte rules
#: (`family_changes`; optionally `family_encoders`, `family_carry`).
KEY_FAMILIES = {
    "avro": "keyguard.guard.keys.avro",
    "json": "keyguard.guard.keys.json",
    "csv": "keyguard.guard.keys.csv",
    "raw": "keyguard.guard.keys.raw",
    "protobuf": "keyguard.guard.keys.protobuf",
}

#: Schema types -> the module of their compatibility checker (`CHECKER`).
CHECKERS = {
    "AVRO": "keyguard.guard.compat.avro",
    "JSON": "keyguard.guard.compat.json",
    "PROTOBUF": "keyguard.guard.compat.protobuf",
}

#: Report formats -> their renderer's module (`render`; `render_error` for a machine format).
RENDERERS = {
    "text": "keyguard.guard.render.text",
    "json": "keyguard.guard.render.json",
    "junit": "keyguard.guard.render.junit",
    "sarif": "keyguard.guard.render.sarif",
    "github": "keyguard.guard.render.github",
    "gitlab": "keyguard.guard.render.gitlab",
}

#: guard's commands of `keyguard`, in the order help lists them: "module:function".
COMMANDS = {
    "encode": "keyguard.guard.cli.bytes_cmd:encode",
    "decode": "keyguard.guard.cli.bytes_cmd:decode",
    "formats": "keyguard.guard.cli.bytes_cmd:formats_cmd",
    "check": "keyguard.guard.cli.check_cmd:check_cmd",
    "diff": "keyguard.guard.cli.diff_cmd:diff_cmd",
    "schema": "keyguard.guard.cli.schema_cmd:schema_cmd",
    "rules": "keyguard.guard.cli.rules_cmd:rules_cmd",
    "audit": "keyguard.guard.cli.audit_cmd:audit_cmd",
}

#: What help lists for each command: the first paragraph of its function's docstring, on one
#: line. Spelled out so that `keyguard --help` imports no command's module (kept equal by a test).
SUMMARIES = {
    "encode": "Print the key and value bytes of one row, exactly as Flink would write them.",
    "decode": "Print the table row that a key and value (or a tombstone) stand for, as JSON.",
    "formats": "List the formats and their options (Flink's names, without the key./value. "
               "prefix).",
    "check": "Check candidate key and value schemas of one topic, or of every topic in a config "
             "file.",
    "diff": "Compare schema files directly: --key for key stability, --level for value "
            "compatibility.",
    "schema": "Print the key or value schema a table writes (.avsc, JSON Schema or .proto), "
              "exactly as keyguard registers it (encode --register, the Spark writer).",
    "rules": "Every guard rule: ID, severity, category, why it matters, a minimal example, its "
             "checks.",
    "audit": "Audit a compacted topic's bytes: phantom keys, misplaced keys, ids, compaction.",
}


def module_of(catalog: dict[str, str], name: str) -> ModuleType | None:
    """The module `catalog` lists for `name`, imported on first use; None when not listed."""
    path = catalog.get(name) if isinstance(name, str) else None
    return None if path is None else importlib.import_module(path)
