"""Tools, their JSON Schemas, and the one place a tool call is turned into a result.

Rules:

1. Arguments are validated with ``jsonschema`` before any tool code runs:
   Draft 2020-12 unless the schema names Draft 7. An object schema that says
   nothing about extra keys refuses them.
2. Every validation error is reported at once, each with its JSON path, so a
   model can fix them all in one turn.
3. The model's mistakes are data. An unknown tool, invalid arguments, a tool
   that raises, and a result that is not JSON all become ``ok=False``.
4. When a tool raises, the model sees a neutral message written here. The
   exception's type and text go to ``detail``, for people. A tool that wants
   the model to read its message raises ``ToolError``.
5. A schema that is itself invalid is refused at registration, not at call time.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import io
import linecache
import os
import threading
import tokenize
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

from .canonical import NotCanonicalizable, canonical
from .events import ToolCall, ToolResult, ToolSpec

__all__ = ["InvalidToolSchema", "Registry", "Tool", "ToolError", "fingerprint", "tool"]

DRAFT7 = "http://json-schema.org/draft-07/schema"


class InvalidToolSchema(ValueError):
    """A tool was declared with a schema that is not valid JSON Schema."""


class ToolError(Exception):
    """Raised by a tool whose message the model should read (unlike other exceptions)."""


def _validator_for(schema: Mapping[str, Any]) -> type[Validator]:
    import jsonschema  # deferred: a run whose calls the quick acceptor passes never loads it

    declared = str(schema.get("$schema", ""))
    if declared.rstrip("#/").startswith(DRAFT7.rstrip("/")) or "draft-07" in declared:
        return jsonschema.Draft7Validator
    return jsonschema.Draft202012Validator


def _close_extras(schema: dict[str, Any]) -> dict[str, Any]:
    """Refuse extra keys when an object schema is silent about them."""
    if schema.get("type") == "object" and not any(
        k in schema for k in ("additionalProperties", "unevaluatedProperties", "patternProperties")
    ) and not any(k in schema for k in ("allOf", "anyOf", "oneOf", "$ref", "if")):
        schema = {**schema, "additionalProperties": False}
    return schema


def _check_schema(name: str, schema: dict[str, Any], text: bytes) -> None:
    """Refuse an invalid schema (rule 5). A schema whose exact canonical text was
    found valid before (this process, or the source cache) is not checked again."""
    key = "schema:" + hashlib.sha256(text).hexdigest()
    cache = _source_cache
    if key in _valid_schemas or (cache is not None and cache.get(key) == "valid"):
        return
    from jsonschema.exceptions import SchemaError

    try:
        _validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = _json_path(exc.path)
        raise InvalidToolSchema(f"tool {name!r} has an invalid schema at {where}: {exc.message}") from None
    _valid_schemas.add(key)
    if cache is not None:
        cache.put(key, "valid")


_valid_schemas: set[str] = set()


def _json_path(path: Iterable[Any]) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


@dataclass
class Tool:
    """A callable the model may ask for, with the JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    read_only: bool = False
    """True when calling it changes nothing: such tools may run in parallel."""
    sensitive: bool = False
    """Its arguments and output are written to the transcript redacted."""
    secret_args: tuple[str, ...] = ()
    """JSON paths (``$.token``) of arguments that are written redacted."""
    fingerprint_override: str | None = None
    """For tools without Python code (MCP): a stand-in, e.g. server name and version."""
    concurrent: bool = False
    """It changes something, yet its calls may run beside others (the ``Agent`` tool: each child keeps its own
    records and draws from one room). Not part of the tool's spec or manifest: it decides scheduling only."""
    _validator: Validator | None = field(init=False, repr=False, default=None)
    _accepts: Callable[[Any], bool] | None = field(init=False, repr=False, default=None)
    _effective: dict[str, Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise InvalidToolSchema("a tool needs a non-empty name")
        if not isinstance(self.parameters, dict):
            raise InvalidToolSchema(f"tool {self.name!r}: its schema must be a JSON object")
        try:
            text = canonical(self.parameters)
        except NotCanonicalizable as exc:
            raise InvalidToolSchema(f"tool {self.name!r}: its schema is not JSON: {exc}") from None
        _check_schema(self.name, self.parameters, text)
        self._effective = _close_extras(self.parameters)
        self._accepts = _quick_acceptor(self._effective)

    def _schema_validator(self) -> Validator:
        if self._validator is None:
            self._validator = _validator_for(self._effective)(self._effective)
        return self._validator

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters, self.read_only)

    @property
    def fingerprint(self) -> str:
        return self.fingerprint_override or fingerprint(self.fn)

    def validate(self, arguments: Any) -> list[str]:
        """Every problem with ``arguments``, each as ``"$.path: message"``; empty when valid."""
        if not isinstance(arguments, dict):
            return [f"$: arguments must be a JSON object, got {type(arguments).__name__}"]
        if self._accepts is not None and self._accepts(arguments):
            return []
        try:
            errors = sorted(self._schema_validator().iter_errors(arguments), key=lambda e: (list(map(str, e.path)), e.message))
        except RecursionError:
            return [_UNCHECKABLE]
        except Exception as exc:  # a $ref the schema cannot resolve: the tool's fault, told to the model
            return [f"$: the tool's schema cannot be applied: {type(exc).__name__}: {str(exc)[:200]}"]
        except BaseException as exc:  # pyo3's PanicException (a RecursionError inside referencing's Rust map)
            if type(exc).__name__ != "PanicException":
                raise
            return [_UNCHECKABLE]
        out = []
        for e in errors:
            out.append(f"{_json_path(e.absolute_path)}: {e.message}")
        return out

    def manifest_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "fingerprint": self.fingerprint,
            "read_only": self.read_only,
        }
        if self.sensitive:
            entry["sensitive"] = True
        if self.secret_args:
            entry["secret_args"] = list(self.secret_args)
        return entry


_UNCHECKABLE = "$: the tool's schema cannot be checked against these arguments (a $ref that never ends)"

_QUICK_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_QUICK_KEYS = frozenset(("type", "description", "title", "default", "enum", "examples"))


def _quick_acceptor(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A shortcut that only ever says "valid" for arguments jsonschema accepts.

    Built only for flat object schemas (properties with a plain type or a
    string enum, ``required``, no extra keys allowed). It returns False
    whenever it is unsure, and then jsonschema decides and explains. A
    property test holds it to jsonschema; it exists because validation is the
    largest cost of a loop step.
    """
    if set(schema) - {"type", "properties", "required", "additionalProperties", "description", "title", "$schema"}:
        return None
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    checks: dict[str, tuple[tuple[type, ...], frozenset[str] | None]] = {}
    for name, sub in props.items():
        # a list of types ({"type": ["string"]}) is jsonschema's to judge (and unhashable here)
        if not isinstance(sub, dict) or set(sub) - _QUICK_KEYS or not isinstance(sub.get("type"), str) or sub["type"] not in _QUICK_TYPES:
            return None
        enum = sub.get("enum")
        if enum is not None and (sub["type"] != "string" or not all(isinstance(e, str) for e in enum)):
            return None
        checks[name] = (_QUICK_TYPES[sub["type"]], frozenset(enum) if enum is not None else None)
    need = tuple(required)

    def accepts(args: Any) -> bool:
        for r in need:
            if r not in args:
                return False
        for k, v in args.items():
            c = checks.get(k)
            if c is None:
                return False
            types_, enum_ = c
            if type(v) not in types_:
                return False
            if enum_ is not None and v not in enum_:
                return False
        return True

    return accepts


MODULE_DEPTH = 3
"""How many module boundaries a fingerprint follows into the user's own code (see ``fingerprint``)."""


def fingerprint(fn: Callable[..., Any]) -> str:
    """A SHA-256 over a function's source and the code of the user's project it reaches.

    Reached code is followed through the names its code uses (recursively, in
    nested functions and lambdas too) that resolve in its globals, through its
    closure cells, its default arguments, decorators' ``__wrapped__``,
    ``functools.partial``, bound methods (the whole class, bases included) and
    instances it uses (their class). What is defined in the tool's own module
    is followed at any depth; what is defined in another module of the user's
    own code (imported by name, or used as ``module.name``) is followed too, up
    to ``MODULE_DEPTH`` module boundaries away from the tool's module. A change
    in any of them changes the print. The standard library, installed packages
    (anything under the interpreter's prefix or a site-packages folder) and
    agentloop itself are not followed: a version bump of a library does not
    change the print. Code in the tool's own module hashes as before (by its
    qualified name); code from other modules is keyed by module and name.
    """
    _file_hashes.clear()  # a file is read once per fingerprint, and afresh for the next
    roots = _code_of(fn)
    module = getattr(roots[0], "__module__", None) if roots else None
    seen: dict[int, tuple[str, str]] = {}
    depth_of: dict[int, int] = {}

    def visit(obj: Any, depth: int, from_module: str | None, root: bool = False) -> None:
        for x in _code_of(obj):
            mod = getattr(x, "__module__", None)
            d = depth
            if not root and mod != module:
                if not _is_user_module(mod):
                    continue
                d = depth + (mod != from_module)
                if d > MODULE_DEPTH:
                    continue
            if id(x) in seen and depth_of[id(x)] <= d:
                continue
            qual = getattr(x, "__qualname__", repr(x))
            seen[id(x)] = (qual if mod == module else f"{mod}:{qual}", _source_of(x))
            depth_of[id(x)] = d
            if inspect.isclass(x):
                for base in x.__mro__[1:]:
                    visit(base, d, mod)
                for member in vars(x).values():
                    for f in _functions_in(member):
                        visit_function(f, d)
            elif inspect.isfunction(x):
                visit_function(x, d)

    def visit_function(f: types.FunctionType, depth: int) -> None:
        glb = f.__globals__
        here = f.__module__
        names = list(_names(f.__code__))
        for name in names:
            ref = glb.get(name)
            if isinstance(ref, types.ModuleType):
                # ``helpers.compute(...)``: what the code takes from a module of the user's own code
                if _is_user_module(ref.__name__) and depth + 1 <= MODULE_DEPTH:
                    for attr in names:
                        sub = getattr(ref, attr, None)
                        if sub is not None and not isinstance(sub, types.ModuleType):
                            visit(sub, depth, here)
            elif ref is not None:
                visit(ref, depth, here)
        for cell in f.__closure__ or ():
            try:
                visit(cell.cell_contents, depth, here)
            except ValueError:  # an empty cell
                pass
        for d in (*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()):
            visit(d, depth, here)

    for r in roots:
        visit(r, 0, module, root=True)
    h = hashlib.sha256()
    for key, source in sorted(seen.values()):
        h.update(key.encode() + b"\0" + source.encode() + b"\0")
    return "sha256:" + h.hexdigest()


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    """Folders whose modules are the standard library or installed packages, never the user's code."""
    import site
    import sys
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(p for k, p in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib"))
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # a virtualenv's old site module
        pass
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


@functools.lru_cache(maxsize=4096)
def _is_user_module(name: str | None) -> bool:
    """A module of the user's own project: one with a source file outside the
    interpreter's and installed packages' folders, and not agentloop."""
    import sys

    if not name or name == "agentloop" or name.startswith("agentloop.") or name == "__main__":
        return False
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None)
    if not path:
        return False
    real = os.path.realpath(path)
    return not any(real.startswith(r) for r in _installed_roots()) and not any(
        part in ("site-packages", "dist-packages") for part in real.split(os.sep)
    )


def _code_of(obj: Any) -> list[Any]:
    """The functions and classes whose code ``obj`` stands for."""
    if isinstance(obj, Tool):
        return [obj.fn]
    if isinstance(obj, functools.partial):
        return [*_code_of(obj.func), *(x for a in (*obj.args, *obj.keywords.values()) for x in _code_of(a))]
    if inspect.ismethod(obj):
        owner = obj.__self__ if inspect.isclass(obj.__self__) else type(obj.__self__)
        return [*_code_of(obj.__func__), owner]
    if inspect.isclass(obj) or inspect.isfunction(obj):
        wrapped = getattr(obj, "__wrapped__", None) if inspect.isfunction(obj) else None
        return [obj, *_code_of(wrapped)] if wrapped is not None else [obj]
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None and not isinstance(obj, types.ModuleType):
        return _code_of(wrapped)
    if obj is None or isinstance(obj, (types.ModuleType, types.BuiltinFunctionType)) or type(obj).__module__ == "builtins":
        return []
    return [type(obj)]  # an instance (callable or used through its methods): its class


def _functions_in(member: Any) -> list[types.FunctionType]:
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if isinstance(member, property):
        return [f for f in (member.fget, member.fset, member.fdel) if inspect.isfunction(f)]
    if inspect.isfunction(member):
        return [member]
    wrapped = getattr(member, "__wrapped__", None)
    return [wrapped] if inspect.isfunction(wrapped) else []


def _names(code: types.CodeType) -> Iterable[str]:
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _names(c)


class SourceCache(typing.Protocol):
    """Where the source text of code objects is kept between runs, keyed by the
    SHA-256 of the file it was read from (so an edited file is a new key, never a
    stale hit). The edge supplies one (``use_source_cache``); the core only asks."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, source: str) -> None: ...


_source_cache: SourceCache | None = None
_file_hashes: dict[str, tuple[str, list[str]]] = {}
"""Files read during one ``fingerprint`` call: their hash and the lines linecache was given."""


class _InProcess:
    """The source text already read in this process, under the same keys as a ``SourceCache``: used when
    none is installed, so an agent's every run does not parse its tools' modules again."""

    LIMIT = 4096

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.entries.get(key)

    def put(self, key: str, source: str) -> None:
        if len(self.entries) >= self.LIMIT:
            self.entries.clear()
        self.entries[key] = source


_in_process = _InProcess()


def use_source_cache(cache: SourceCache | None) -> None:
    """Serve ``fingerprint``'s source look-ups from ``cache`` (None: none between processes; within this
    one the text read is kept under the same keys, the hash of the file it came from first)."""
    global _source_cache
    _source_cache = cache


def _file_hash(path: str) -> tuple[str, list[str]] | None:
    """The SHA-256 of a source file's bytes, and its lines, which linecache is given as they
    were read: what ``inspect`` then extracts is the text of exactly the bytes hashed."""
    known = _file_hashes.get(path)
    if known is not None:
        return known
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            data = f.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        lines = data.decode(encoding).splitlines(keepends=True)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[path] = (st.st_size, st.st_mtime, lines, path)
    known = (hashlib.sha256(data).hexdigest(), lines)
    _file_hashes[path] = known
    return known


def _cache_key(obj: Any) -> tuple[str, str, list[str]] | None:
    """The key of ``obj``'s source (its file's content hash, kind, qualified name and first
    line), the file's path and the lines read. Taken from what ``inspect.getsource`` reads:
    the innermost ``__wrapped__`` (one wrapper function can stand for many wrapped ones)."""
    try:
        obj = inspect.unwrap(obj)
        path = inspect.getsourcefile(obj)
    except (TypeError, ValueError):  # not code; a __wrapped__ cycle
        return None
    read = _file_hash(path) if path else None
    if path is None or read is None:
        return None
    code = getattr(obj, "__code__", None)
    line = code.co_firstlineno if code is not None else 0
    kind = "class" if inspect.isclass(obj) else "code"
    return f"{read[0]}:{kind}:{getattr(obj, '__qualname__', '')}:{line}", path, read[1]


_PARSING = threading.Lock()
"""``inspect.getsource`` parses with ``ast``, which CPython 3.11 cannot do on two threads at once
(``SystemError: AST constructor recursion depth mismatch``): children started together fingerprint
their tools at the same time."""


def _source_of(obj: Any) -> str:
    cache: SourceCache = _source_cache if _source_cache is not None else _in_process
    found = _cache_key(obj)
    if found is not None:
        hit = cache.get(found[0])
        if hit is not None:
            return hit
    try:
        with _PARSING:
            source = inspect.getsource(obj)
        if found is not None:
            key, path, lines = found
            entry: Any = linecache.cache.get(path)
            if entry is not None and len(entry) == 4 and entry[2] is lines:  # extracted from the very bytes hashed
                cache.put(key, source)
        return source
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is not None:
            return repr((code.co_code, code.co_consts, code.co_names))
        return repr(obj)


# --- building a schema from a typed function ---------------------------------

_SIMPLE: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _schema_for(tp: Any) -> dict[str, Any]:
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if tp is Any or tp is inspect.Parameter.empty:
        return {}
    if tp is type(None):
        return {"type": "null"}
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return {"anyOf": [_schema_for(a) for a in args]}
    if origin in (list, Sequence, tuple) or tp in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_schema_for(a) for a in args], "items": False}
        item = args[0] if args else Any
        return {"type": "array", "items": _schema_for(item)}
    if origin in (dict, Mapping) or tp is dict:
        sch: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            sch["additionalProperties"] = _schema_for(args[1])
        return sch
    if typing.is_typeddict(tp):
        hints = get_type_hints(tp)
        required = sorted(getattr(tp, "__required_keys__", hints))
        return {
            "type": "object",
            "properties": {k: _schema_for(v) for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    raise InvalidToolSchema(f"cannot build a JSON Schema for the type {tp!r}: declare the schema explicitly")


def _param_docs(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its summary and the ``Args:`` descriptions."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and " " not in stripped:
                in_args = False
                continue
            if ":" in stripped and not line.startswith("        "):
                name, _, desc = stripped.partition(":")
                current = name.split("(")[0].strip()
                params[current] = desc.strip()
            elif current and stripped:
                params[current] += " " + stripped
            continue
        summary.append(line)
    return "\n".join(summary).strip(), params


def schema_from_function(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """The description and JSON Schema of a typed function's keyword arguments."""
    sig = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception as exc:  # an unresolvable annotation is the declarer's mistake
        raise InvalidToolSchema(f"cannot read the type hints of {fn.__name__}: {exc}") from None
    description, docs = _param_docs(fn.__doc__ or "")
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise InvalidToolSchema(f"{fn.__name__}: *args and **kwargs cannot be described to a model")
        s = dict(_schema_for(hints.get(name, Any)))
        if name in docs:
            s["description"] = docs[name]
        if p.default is p.empty:
            required.append(name)
        else:
            try:
                canonical(p.default)
                s["default"] = p.default
            except NotCanonicalizable:
                pass
        props[name] = s
    schema = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    return description or fn.__name__, schema


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    schema: dict[str, Any] | None = None,
    read_only: bool = False,
    sensitive: bool = False,
    secret_args: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    schema: dict[str, Any] | None = None,
    read_only: bool = False,
    sensitive: bool = False,
    secret_args: Sequence[str] = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` from a typed function; usable bare (``@tool``) or with options.

    The docstring's first part is the description; its ``Args:`` section
    describes the parameters. Pass ``schema`` to declare the schema by hand.
    """

    def build(f: Callable[..., Any]) -> Tool:
        desc, sch = schema_from_function(f) if schema is None else (f.__doc__ or f.__name__, schema)
        return Tool(
            name=name or f.__name__,
            description=description or inspect.cleandoc(desc),
            parameters=copy.deepcopy(sch),
            fn=f,
            read_only=read_only,
            sensitive=sensitive,
            secret_args=tuple(secret_args),
        )

    return build(fn) if fn is not None else build


class Registry:
    """The tools of a run, by name, in the order they were registered."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()):
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, t: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (or a typed function, made into one). Raises on a duplicate name."""
        if not isinstance(t, Tool):
            t = tool(t)
        assert isinstance(t, Tool)
        if t.name in self._tools:
            raise InvalidToolSchema(f"a tool named {t.name!r} is already registered")
        self._tools[t.name] = t
        return t

    def replace(self, t: Tool) -> Tool:
        """Put ``t`` in the place of the tool of its name (which must be there), keeping the order."""
        if t.name not in self._tools:
            raise InvalidToolSchema(f"no tool named {t.name!r} to replace")
        self._tools[t.name] = t
        return t

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> typing.Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def manifest(self) -> list[dict[str, Any]]:
        return [t.manifest_entry() for t in self._tools.values()]

    # -- the one place a call becomes a result --

    def prepare(self, call: ToolCall) -> tuple[Tool | None, ToolResult | None]:
        """Look the tool up and validate its arguments. Returns the tool, or the refusal."""
        t = self._tools.get(call.name)
        if t is None:
            have = ", ".join(sorted(self._tools)) or "none"
            return None, ToolResult(call.id, call.name, False, error=f"no tool named {call.name!r} (have: {have})")
        problems = t.validate(call.arguments)
        if problems:
            n = len(problems)
            lines = "\n".join(f"  - {p}" for p in problems)
            msg = (
                f"invalid arguments for {call.name!r} ({n} problem{'s' if n != 1 else ''}):\n{lines}\n"
                f"Fix only the fields listed and call {call.name!r} again."
            )
            return None, ToolResult(call.id, call.name, False, error=msg)
        return t, None

    def invoke(self, call: ToolCall) -> ToolResult:
        """Run one call and always return a result; never raises for the model's mistakes."""
        t, refusal = self.prepare(call)
        if refusal is not None or t is None:
            return refusal or ToolResult(call.id, call.name, False, error="tool unavailable")
        try:
            value = t.fn(**call.arguments)
            if (hasattr(value, "__await__") or type(value) is types.GeneratorType) and inspect.isawaitable(value):
                import asyncio

                value = asyncio.run(_await(value))
        except Exception as exc:  # the tool's failure is data for the model
            return raised(call, exc)
        return finish(call, value)

    async def ainvoke(self, call: ToolCall) -> ToolResult:
        import asyncio

        t, refusal = self.prepare(call)
        if refusal is not None or t is None:
            return refusal or ToolResult(call.id, call.name, False, error="tool unavailable")
        try:
            if t.is_async:
                value = await t.fn(**call.arguments)
            else:
                value = await asyncio.to_thread(t.fn, **call.arguments)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            return raised(call, exc)
        return finish(call, value)


async def _await(aw: Any) -> Any:
    return await aw


def raised(call: ToolCall, exc: BaseException) -> ToolResult:
    """The result of a tool that raised: neutral for the model, full for people."""
    detail = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ToolError):
        return ToolResult(call.id, call.name, False, error=str(exc), detail=detail)
    return ToolResult(
        call.id,
        call.name,
        False,
        error=f"the tool {call.name!r} failed while running; the failure was recorded for the operator",
        detail=detail,
    )


def finish(call: ToolCall, value: Any) -> ToolResult:
    """The result of a tool that returned: refused when it cannot be recorded."""
    try:
        canonical(value)
    except NotCanonicalizable as exc:
        return ToolResult(
            call.id,
            call.name,
            False,
            error=f"the tool {call.name!r} returned a value that cannot be recorded as JSON",
            detail={"type": "NotCanonicalizable", "message": str(exc)},
        )
    return ToolResult(call.id, call.name, True, content=value)
