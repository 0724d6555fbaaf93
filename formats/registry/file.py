"""A schema registry kept as files: the embedded default, reviewable in git.

Layout (every file optional except the version files)::

    DIR/config.json                          {"compatibility": "BACKWARD"}   registry default
    DIR/subjects/<subject>/config.json       {"compatibility": "FULL"}       subject's own level
    DIR/subjects/<subject>/v<N>.avsc         version N, an Avro schema
    DIR/subjects/<subject>/v<N>.json         version N, a JSON Schema
    DIR/subjects/<subject>/v<N>.proto        version N, a Protobuf schema
    DIR/subjects/<subject>/v<N>.refs.json    [{"name", "subject", "version"}] version N's references
    DIR/subjects/<subject>/ids.json          {"1": 100017, "2": 100023}     pinned schema ids

A version that references types or documents of other subjects (Confluent's schema references,
see `keyguard.formats.registry.references`) lists them in `v<N>.refs.json`, a JSON list of
`{"name": "com.acme.Address", "subject": "address-value", "version": 1}`: for Avro the full name
of a named type that version defines, for JSON Schema the URI its `$ref`s use. The references
are part of the version's identity (and of its derived id), as in Confluent's registry.

The registry's empty state is an existing directory with nothing of the layout in it yet (hidden
files and a README aside): `keyguard` never takes a missing directory, a file, or a directory
holding something else for an empty registry, because "no versions yet" passes the guard. Such
a root is reported as an unavailable registry (exit 3). Registering into a missing directory
creates it (that is how a file registry starts).

The extension is the schema type. `<subject>` is the subject name percent-encoded
(`urllib.parse.quote(subject, safe="")`), so `orders-key` is stored as is.

Schema ids matter because avro-confluent keys carry the id in their bytes: the same key
written with two ids is two different Kafka keys, and compaction never folds them. So an
export of a real registry pins its real ids in `ids.json`; without a pin, a schema's id is
derived from its canonical form (`keyguard.formats.schema_identity.derived_schema_id`: 31 bits of a
SHA-256 of type + canonical text), the same on every run and machine, and the same schema gets
the same id in every subject, as Confluent's. What makes two texts one schema is
`keyguard.formats.schema_identity.canonical_form` (pure, shared with the analysis).

Schema GUIDs (what Confluent's header-framed records carry instead of an id) are derived too:
`uuid5` of a fixed namespace and the schema's type + canonical form
(`keyguard.formats.schema_identity.derived_guid`), one GUID per schema in every subject, the
same on every run and machine. They are not stored, and not pinned: an export of a real
registry keeps its ids, not its GUIDs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

from keyguard.formats.errors import RegistryError, RegistryUnavailableError, SchemaError
from keyguard.formats.registry import (
    COMPATIBILITY_LEVELS,
    DEFAULT_COMPATIBILITY,
    CompatibilityAnswer,
    Registration,
    SchemaVersion,
    parse_guid,
)

# Schema identity is pure (`keyguard.formats.schema_identity`); re-exported for older importers.
from keyguard.formats.schema_identity import canonical_form as canonical_form
from keyguard.formats.schema_identity import derived_guid
from keyguard.formats.schema_identity import derived_schema_id as derived_schema_id
from keyguard.formats.schema_identity import same_schema as same_schema

EXTENSIONS = {"AVRO": "avsc", "JSON": "json", "PROTOBUF": "proto"}
_TYPE_OF_EXT = {ext: t for t, ext in EXTENSIONS.items()}
_VERSION_FILE = re.compile(r"^v([1-9][0-9]*)\.(avsc|json|proto)$")


# --- where the files come from -------------------------------------------------------------


class _Tree(Protocol):
    writable: bool

    def read(self, rel: str) -> str | None: ...

    def listdir(self, rel: str) -> list[str]: ...

    def where(self, rel: str) -> str: ...


class _DirTree:
    """A directory on disk, read afresh on every call."""

    writable = True

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return None

    def listdir(self, rel: str) -> list[str]:
        try:
            return sorted(os.listdir(self.root / rel))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def where(self, rel: str) -> str:
        return str(self.root / rel)

    def create(self, rel: str, text: str) -> bool:
        """Write a new file; False when it already exists (another writer got there first)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            return False
        return True

    def replace(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)


class _GitTree:
    """The layout as committed at a git ref: read once, never written."""

    writable = False

    def __init__(self, repo_dir: Path, ref: str, subdir: str) -> None:
        self.repo_dir, self.ref = repo_dir, ref
        self.subdir = subdir.strip("/") if subdir not in ("", ".") else ""
        try:
            self.commit = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                                    what=f"git ref '{ref}'").strip()
        except RegistryError as exc:
            raise self._shallow_clone_error(ref) or exc from None
        prefix = f"{self.subdir}/" if self.subdir else ""
        listing = self._git("ls-tree", "-r", "-z", "--name-only", self.commit, "--",
                            self.subdir or ".", what="git ls-tree")
        self.files = {p[len(prefix):] for p in listing.split("\0") if p.startswith(prefix)}
        self._cache: dict[str, str | None] = {}

    def _shallow_clone_error(self, ref: str) -> RegistryError | None:
        """The error for a ref missing from a shallow clone (CI checkouts fetch one commit by
        default), or None when the clone is whole."""
        shallow = subprocess.run(["git", "-C", str(self.repo_dir), "rev-parse",
                                  "--is-shallow-repository"],
                                 capture_output=True, text=True, check=False)
        if shallow.stdout.strip() != "true":
            return None
        branch = ref.removeprefix("origin/")
        return RegistryError(
            f"git ref '{ref}' is not in this clone of {self.repo_dir}: it is a shallow clone, "
            "which holds only the commits it fetched",
            hint=f"fetch the base first (git fetch --no-tags --depth=1 origin "
                 f"{branch}:refs/remotes/origin/{branch}), or clone with full history "
                 "(actions/checkout: fetch-depth: 0; GitLab: GIT_DEPTH: 0)")

    def _git(self, *args: str, what: str) -> str:
        try:
            proc = subprocess.run(["git", "-C", str(self.repo_dir), *args],
                                  capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise RegistryError("reading a schema registry at a git ref needs the git command",
                                hint="install git") from None
        if proc.returncode != 0:
            raise RegistryError(
                f"{what} could not be read in {self.repo_dir}: "
                f"{proc.stderr.strip() or 'not found'}",
                hint="check the ref name (git branch -a, git tag) and that the path is a "
                     "git repository",
            )
        return proc.stdout

    def read(self, rel: str) -> str | None:
        if rel not in self.files:
            return None
        if rel not in self._cache:
            path = f"{self.subdir}/{rel}" if self.subdir else rel
            self._cache[rel] = self._git("cat-file", "blob", f"{self.commit}:./{path}",
                                         what=f"{path} at {self.ref}")
        return self._cache[rel]

    def listdir(self, rel: str) -> list[str]:
        prefix = f"{rel.rstrip('/')}/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.files
                       if p.startswith(prefix)})

    def where(self, rel: str) -> str:
        path = f"{self.subdir}/{rel}" if self.subdir else rel
        return f"{path} at git ref {self.ref}"


# --- the registry ---------------------------------------------------------------------------


def _subject_dir(subject: str) -> str:
    if not subject or subject in (".", ".."):
        raise RegistryError(f"invalid subject name {subject!r}")
    return "subjects/" + quote(subject, safe="")


class FileRegistry:
    """A registry in a directory (or in a git ref of one); see the module doc for the layout."""

    def __init__(self, root: str | os.PathLike[str], *, _tree: _Tree | None = None,
                 _name: str | None = None) -> None:
        self._tree: _Tree = _tree or _DirTree(Path(root))
        self.name = _name or f"file://{Path(root)}"
        # A git ref's tree was read by git already: its absence of files is a fact.
        self._proven = not isinstance(self._tree, _DirTree)

    def create(self) -> None:
        """Start the registry if its root is missing: for a writer about to register into it
        (the Spark writer with auto.register.schemas, or guard.registry), not for a check."""
        if isinstance(self._tree, _DirTree) and not self._tree.root.exists():
            try:
                (self._tree.root / "subjects").mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RegistryUnavailableError(
                    f"schema registry {self.name}: cannot create {self._tree.root}: "
                    f"{exc.strerror}", hint="check the registry URL and permissions") from None

    def prove(self) -> None:
        """Fail unless the root exists and has the layout (see the module doc); proved once."""
        if self._proven:
            return
        root = self._tree.root if isinstance(self._tree, _DirTree) else None
        if root is None:  # pragma: no cover - only dir trees are unproven
            return
        hint = (f"check the registry URL; to start an empty file registry, create it "
                f"(mkdir -p {root}/subjects)")
        if not root.exists():
            raise RegistryUnavailableError(
                f"schema registry {self.name}: directory {root} does not exist", hint=hint)
        if not root.is_dir():
            raise RegistryUnavailableError(
                f"schema registry {self.name}: {root} is not a directory", hint=hint)
        subjects = root / "subjects"
        if subjects.exists() and not subjects.is_dir():
            raise RegistryUnavailableError(
                f"schema registry {self.name}: {subjects} is not a directory",
                hint="a file registry keeps subjects/<subject>/v<N>.avsc")
        if not subjects.exists() and not (root / "config.json").is_file():
            try:
                stray = sorted(n for n in os.listdir(root)
                               if not n.startswith(".") and not n.upper().startswith("README"))
            except OSError as exc:
                raise RegistryUnavailableError(
                    f"schema registry {self.name}: {root} cannot be read: {exc.strerror}",
                    hint=hint) from None
            if stray:
                raise RegistryUnavailableError(
                    f"schema registry {self.name}: {root} does not have a file registry's "
                    f"layout (no subjects/ directory or config.json; it holds "
                    f"{', '.join(stray[:3])}{', ...' if len(stray) > 3 else ''})",
                    hint="point the registry URL at the directory that holds subjects/")
        self._proven = True

    @classmethod
    def at_git_ref(cls, repo_dir: str | os.PathLike[str], ref: str,
                   subdir: str = "schemas") -> FileRegistry:
        """The registry as committed at `ref` (read-only): what `--against git:REF` compares to.

        A `subdir` absent at that ref is an empty registry: nothing had been registered then.
        """
        tree = _GitTree(Path(repo_dir), ref, subdir)
        return cls(repo_dir, _tree=tree, _name=f"git:{ref}:{subdir}")

    def __repr__(self) -> str:
        return f"FileRegistry({self.name!r})"

    # -- reading

    def _read_json(self, rel: str) -> Any:
        text = self._tree.read(rel)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise RegistryError(f"{self._tree.where(rel)}: not valid JSON: {exc}") from None

    def _version_files(self, subject: str) -> dict[int, str]:
        base = _subject_dir(subject)
        found: dict[int, str] = {}
        for name in self._tree.listdir(base):
            m = _VERSION_FILE.match(name)
            if not m:
                continue
            n = int(m.group(1))
            if n in found:
                raise SchemaError(
                    f"{self._tree.where(base)}: version {n} is stored twice "
                    f"({found[n]} and {name})", hint="keep one file per version")
            found[n] = name
        return found

    def _pinned_ids(self, subject: str) -> dict[int, int]:
        rel = f"{_subject_dir(subject)}/ids.json"
        raw = self._read_json(rel)
        if raw is None:
            return {}
        try:
            pins = {int(v): int(i) for v, i in raw.items()}
        except (AttributeError, TypeError, ValueError):
            pins = {}
            raw = None
        if raw is None or any(not 0 < i < 2**31 for i in pins.values()):
            raise RegistryError(
                f"{self._tree.where(rel)}: expected an object of version -> schema id, "
                'such as {"1": 100017}, with ids between 1 and 2147483647')
        return pins

    def subjects(self) -> list[str]:
        self.prove()
        names = (unquote(d) for d in self._tree.listdir("subjects"))
        return sorted(s for s in names if s not in (".", "..") and self._version_files(s))

    def versions(self, subject: str) -> list[int]:
        self.prove()
        return sorted(self._version_files(subject))

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        self.prove()
        files = self._version_files(subject)
        if not files:
            raise RegistryError(f"{self.name}: subject '{subject}' not found",
                                hint=f"registered subjects: {', '.join(self.subjects()) or 'none'}")
        if version in ("latest", -1):
            n = max(files)
        else:
            try:
                n = int(version)
            except ValueError:
                raise RegistryError(
                    f"invalid version {version!r}; use a number or 'latest'") from None
            if n not in files:
                raise RegistryError(
                    f"{self.name}: subject '{subject}' has no version {n}",
                    hint="versions: " + ", ".join(map(str, sorted(files))))
        return self._load(subject, n, files[n])

    def _load(self, subject: str, n: int, filename: str,
              pins: dict[int, int] | None = None) -> SchemaVersion:
        rel = f"{_subject_dir(subject)}/{filename}"
        text = (self._tree.read(rel) or "").strip()
        schema_type = _TYPE_OF_EXT[filename.rsplit(".", 1)[1]]
        where = self._tree.where(rel)
        refs = self._references(subject, n)
        canonical_form(text, schema_type, where=where, references=refs)  # a bad file names itself
        pins = self._pinned_ids(subject) if pins is None else pins
        schema_id = pins.get(n) or derived_schema_id(text, schema_type, refs)
        return SchemaVersion(subject, n, schema_id, text, schema_type, refs,
                             derived_guid(text, schema_type, refs))

    def _references(self, subject: str, n: int) -> tuple[dict[str, object], ...]:
        rel = f"{_subject_dir(subject)}/v{n}.refs.json"
        raw = self._read_json(rel)
        if raw is None:  # no references file: parse_references answers ()
            return ()
        # lazy: CLI start-up (schema references, only for a version that has some)
        from keyguard.formats.registry.references import parse_references

        return tuple(r.as_dict() for r in parse_references(raw, self._tree.where(rel)))

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        self.prove()
        files = self._version_files(subject)
        pins = self._pinned_ids(subject) if files else {}
        return [self._load(subject, n, files[n], pins) for n in sorted(files)]

    def _everything(self) -> Iterator[SchemaVersion]:
        for subject in self.subjects():
            yield from self.all_versions(subject)

    def _ids(self) -> dict[int, tuple[str, SchemaVersion]]:
        """id -> (canonical form, first version with it); two schemas on one id is an error."""
        index: dict[int, tuple[str, SchemaVersion]] = {}
        for sv in self._everything():
            canon = f"{sv.schema_type}\0" \
                f"{canonical_form(sv.schema, sv.schema_type, references=sv.references)}"
            seen = index.setdefault(sv.schema_id, (canon, sv))
            if seen[0] != canon:
                other = seen[1]
                raise RegistryError(
                    f"{self.name}: schema id {sv.schema_id} is used by two different schemas "
                    f"({other.subject} v{other.version} and {sv.subject} v{sv.version})",
                    hint="pin a different id for one of them in its subject's ids.json")
        return index

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        self.prove()
        found = self._ids().get(schema_id)
        if found is None:
            raise RegistryError(f"{self.name}: no schema with id {schema_id}",
                                hint="the bytes were written against another registry, or "
                                     "the schema's ids.json pin is missing")
        return found[1].schema_type, found[1].schema

    def references_of_id(self, schema_id: int) -> tuple[dict[str, object], ...]:
        """The references of the schema registered under `schema_id`."""
        found = self._ids().get(schema_id)
        return found[1].references if found else ()

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        self.prove()
        want = parse_guid(guid)
        found = next((sv for sv in self._everything() if sv.guid == want), None)
        if found is None:
            raise RegistryError(f"{self.name}: no schema with GUID {want}",
                                hint="the record was written against another registry: a "
                                     "file registry's GUIDs are derived from its schemas")
        return found.schema_type, found.schema

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        self.prove()
        return same_schema(self.all_versions(subject), schema, schema_type, references)

    def compatibility(self, subject: str) -> str:
        self.prove()
        for rel in (f"{_subject_dir(subject)}/config.json", "config.json"):
            raw = self._read_json(rel)
            if raw is None:
                continue
            level = raw.get("compatibility", raw.get("compatibilityLevel")) \
                if isinstance(raw, dict) else None
            if level is None:
                continue
            if str(level).upper() not in COMPATIBILITY_LEVELS:
                raise RegistryError(
                    f"{self._tree.where(rel)}: unknown compatibility level {level!r}",
                    hint="use one of " + ", ".join(COMPATIBILITY_LEVELS))
            return str(level).upper()
        return DEFAULT_COMPATIBILITY

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Mapping[str, object]] = ()
                            ) -> CompatibilityAnswer | None:
        """None: a file registry has no compatibility checker of its own (the guard is it)."""
        return None

    # -- writing

    def _writable(self) -> _DirTree:
        if not isinstance(self._tree, _DirTree):
            raise RegistryError(f"{self.name} is read-only",
                                hint="register into the working directory, not a git ref")
        return self._tree

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        """Add a version (no compatibility check: that is the guard's job); idempotent."""
        schema_type = schema_type.upper()
        refs = [dict(r) for r in references]
        tree = self._writable()
        try:  # the first register creates the registry
            tree.root.mkdir(parents=True, exist_ok=True)
            (tree.root / "subjects").mkdir(exist_ok=True)
        except OSError as exc:
            raise RegistryUnavailableError(
                f"schema registry {self.name}: cannot create {tree.root}/subjects: "
                f"{exc.strerror}", hint="check the registry URL and permissions") from None
        canon = f"{schema_type}\0{canonical_form(schema, schema_type, references=refs)}"
        existing = self.lookup(subject, schema, schema_type, refs)
        if existing is not None:
            return existing.schema_id
        ids = self._ids()
        same = sorted(i for i, (c, _) in ids.items() if c == canon)
        derived = derived_schema_id(schema, schema_type, refs)
        schema_id = same[0] if same else derived
        if schema_id in ids and ids[schema_id][0] != canon:
            other = ids[schema_id][1]
            raise RegistryError(
                f"{self.name}: the derived id {schema_id} of this schema is already used by "
                f"{other.subject} v{other.version}",
                hint=f"pin an unused id for the new version in {subject}'s ids.json")
        base = _subject_dir(subject)
        n = max(self._version_files(subject), default=0) + 1
        # The references first (a reader never sees the version without them); creating
        # them claims version n against another writer with references.
        while (refs and not tree.create(f"{base}/v{n}.refs.json",
                                        json.dumps(refs, indent=2) + "\n")) or \
                not tree.create(f"{base}/v{n}.{EXTENSIONS[schema_type]}", schema.strip() + "\n"):
            n += 1
        if schema_id != derived:
            pins = self._pinned_ids(subject)
            pins[n] = schema_id
            tree.replace(f"{base}/ids.json", json.dumps(
                {str(v): i for v, i in sorted(pins.items())}, indent=2) + "\n")
        return schema_id

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        """`register`, with the schema's derived GUID (see the module doc)."""
        schema_id = self.register(subject, schema, schema_type, references)
        return Registration(schema_id, derived_guid(schema, schema_type.upper(), references))

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        """Write the registry default (subject None) or a subject's own level."""
        if level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError(f"unknown compatibility level {level!r}",
                                hint="use one of " + ", ".join(COMPATIBILITY_LEVELS))
        rel = "config.json" if subject is None else f"{_subject_dir(subject)}/config.json"
        self._writable().replace(rel, json.dumps({"compatibility": level.upper()}) + "\n")

