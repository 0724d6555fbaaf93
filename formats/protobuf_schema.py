"""Protobuf schemas: `.proto` text (the form a registry stores) parsed by protoc itself.

`parse_proto(text)` compiles the text with protoc as the `grpcio-tools` wheel ships it (never a
hand-written parser) and returns a `ProtoSchema`: the file's `FileDescriptorProto` and those of
its imports, the model every later step works on (the format's encoders, the guard's key rules
and the compatibility checker). Imports resolve against the schema's references (name -> text,
as a registry's references give them) and protobuf's well-known types shipped with protoc.

Errors are protoc's, with their line and column: a SchemaError naming the origin.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from formats.errors import SchemaError

#: The file name the parsed text gets when nothing else names it (Confluent's serializer uses
#: the generated message's file name; the registry does not store it).
DEFAULT_FILE_NAME = "schema.proto"

# protoc is a C++ library with process-wide state; one compile at a time.
_PROTOC = threading.Lock()


@dataclass(frozen=True)
class ProtoSchema:
    """A parsed `.proto` file: its descriptor and its imports' descriptors (dependencies first)."""

    text: str
    file: object  # google.protobuf.descriptor_pb2.FileDescriptorProto
    dependencies: tuple[object, ...] = field(default=())

    @property
    def syntax(self) -> str:
        return self.file.syntax or "proto2"  # type: ignore[attr-defined]

    def message_names(self) -> list[str]:
        """Top-level message names in file order (the order the message index counts in)."""
        return [m.name for m in self.file.message_type]  # type: ignore[attr-defined]


def _include_dir() -> str:
    import grpc_tools  # lazy: protoc only when a protobuf schema is read

    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def parse_proto(text: str, origin: str = "schema", *, name: str = DEFAULT_FILE_NAME,
                references: Mapping[str, str] | None = None) -> ProtoSchema:
    """Compile `.proto` text; SchemaError (with protoc's line:column) when it does not compile.

    `references`: imported file name -> its `.proto` text (a registry schema's references).
    """
    if not isinstance(text, str) or not text.strip():
        raise SchemaError(f"{origin}: the Protobuf schema is empty",
                          hint="give the .proto text of the schema")
    try:
        from google.protobuf import descriptor_pb2  # lazy: protobuf runtime
        from grpc_tools import _protoc_compiler  # lazy: protoc only when needed
    except ImportError as exc:  # pragma: no cover - a broken install
        raise SchemaError(f"{origin}: reading a Protobuf schema needs protoc ({exc})",
                          hint="pip install grpcio-tools") from None
    files = dict(references or {})
    files[name] = text
    with _PROTOC, tempfile.TemporaryDirectory(prefix="keyguard-proto-") as tmp:
        for file_name, body in files.items():
            path = Path(tmp, file_name)
            if Path(tmp) not in path.resolve().parents:
                raise SchemaError(f"{origin}: reference name {file_name!r} leaves its directory",
                                  hint="name references by relative .proto paths")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        include = [tmp.encode(), _include_dir().encode()]
        try:
            # get_protos reports errors structured (file:line:column); run_main would print them.
            _protoc_compiler.get_protos(name.encode(), include)
        except _protoc_compiler.ProtocErrors as exc:
            raise SchemaError(f"{origin}: the Protobuf schema does not compile: "
                              + _protoc_message(exc, name, origin),
                              hint="fix the .proto text at that line and column") from None
        out = os.path.join(tmp, "out.desc")
        args = [b"protoc", b"-I" + include[0], b"-I" + include[1],
                b"--include_imports", b"--descriptor_set_out=" + out.encode(), name.encode()]
        if _protoc_compiler.run_main(args) != 0:
            raise SchemaError(f"{origin}: protoc could not compile the Protobuf schema",
                              hint="check the .proto text and its imports")
        descriptors = descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())
    by_name = {f.name: f for f in descriptors.file}
    main = by_name.pop(name)
    return ProtoSchema(text=text, file=main, dependencies=tuple(by_name.values()))


def _protoc_message(exc: object, name: str, origin: str) -> str:
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else []  # type: ignore
    parts = []
    for err in errors or []:
        where = err.filename.decode() if isinstance(err.filename, bytes) else str(err.filename)
        if where == name:
            where = origin
        message = err.message.decode() if isinstance(err.message, bytes) else str(err.message)
        # protoc counts lines and columns from 0.
        parts.append(f"line {err.line + 1}, column {err.column + 1} of {where}: {message}")
    return "; ".join(parts) or str(exc)
