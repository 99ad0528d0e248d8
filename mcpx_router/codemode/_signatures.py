"""A tool as a typed Python function: its signature and docstring, and its arguments bound back.

`ToolFunction.of(tool, namespace, function)` reads the tool's input schema (and output schema,
where the peer gives one): each property becomes a parameter with a type annotation (required
ones first, the others `= None` or their schema default), under an identifier of its own when the
property's name is none. `bind` turns a call's positional and keyword arguments into the JSON
arguments the router's dispatch checks, under the properties' own names. No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._identifiers import Identifiers

__all__ = ["ToolFunction", "annotation"]

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_MAX_DEPTH = 4
_MAX_LITERALS = 12


def annotation(schema: object, depth: int = 0) -> str:
    """The Python type a JSON Schema describes, as text (`Any` for what has no simple type).

    Example:
        >>> annotation({"type": ["string", "null"]})
        'str | None'
        >>> annotation({"type": "array", "items": {"type": "integer"}})
        'list[int]'
    """
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= _MAX_LITERALS and all(_literal(v) for v in enum):
        return "Literal[" + ", ".join(_py_repr(v) for v in enum) + "]"
    if "const" in schema and _literal(schema["const"]):
        return f"Literal[{_py_repr(schema['const'])}]"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union(annotation(option, depth + 1) for option in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(annotation({**schema, "type": k}, depth + 1) for k in kind if isinstance(k, str))
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{annotation(items, depth + 1)}]" if isinstance(items, Mapping) else "list[Any]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        value = annotation(extra, depth + 1) if isinstance(extra, Mapping) else "Any"
        return f"dict[str, {value}]"
    return "Any"


def wraps_result(schema: object) -> bool:
    """Whether an output schema is an object holding one required property, `result`."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return False
    properties = schema.get("properties")
    return (
        isinstance(properties, Mapping)
        and list(properties) == ["result"]
        and schema.get("required") == ["result"]
        and isinstance(properties["result"], Mapping)
    )


def _literal(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _py_repr(value: object) -> str:
    return repr(value)


def _union(parts: Any) -> str:
    seen: list[str] = []
    for part in parts:
        for piece in part.split(" | ") if "[" not in part else [part]:
            if piece not in seen:
                seen.append(piece)
    if "Any" in seen:
        return "Any"
    return " | ".join(seen) if seen else "Any"


@dataclass(frozen=True, slots=True)
class Parameter:
    ident: str
    """The Python name of the parameter."""
    name: str
    """The property's name in the schema (what the peer is sent)."""
    annotation: str
    required: bool
    default: str
    """The default as the signature shows it ("" when required)."""
    description: str


DISABLED = (
    "Not callable from programs here: the tool declares itself destructive and the host has not "
    "enabled such tools (a call raises PermissionError)."
)


@dataclass(frozen=True, slots=True)
class ToolFunction:
    """One published tool as a function of its peer's namespace in the sandbox."""

    public_name: str
    """The tool's public name, the one the router's dispatch resolves."""
    namespace: str
    function: str
    parameters: tuple[Parameter, ...]
    returns: str
    description: str
    structured: bool
    """The tool declares an output schema: its results are dicts."""
    destructive: bool = False
    """The tool may change things beyond repair (`PublishedTool.destructive`)."""
    unwrap: bool = False
    """The output schema only wraps a value as `{"result": value}` (as the MCP Python SDK and
    FastMCP do for a function returning a str, list...): the program gets the value."""
    enabled: bool = True
    """Programs may call it. False for a tool that declares itself destructive when the host has
    not enabled those (`CodeMode(approve=...)` or `allow_destructive=True`): a call raises
    `PermissionError` and reaches no peer."""

    @classmethod
    def of(
        cls,
        public_name: str,
        namespace: str,
        function: str,
        description: str,
        input_schema: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None = None,
        destructive: bool = False,
        enabled: bool = True,
    ) -> ToolFunction:
        properties = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
        properties = properties if isinstance(properties, Mapping) else {}
        required_list = input_schema.get("required") if isinstance(input_schema, Mapping) else None
        required = (
            {r for r in required_list if isinstance(r, str)} if isinstance(required_list, list) else set()
        )
        names = [name for name in properties if isinstance(name, str)]
        ordered = [n for n in names if n in required] + [n for n in names if n not in required]
        idents: Identifiers[str] = Identifiers("arg")
        idents.update(ordered)
        params = []
        for name in ordered:
            schema = properties[name]
            schema = schema if isinstance(schema, Mapping) else {}
            is_required = name in required
            text = annotation(schema)
            default = ""
            if not is_required:
                value = schema.get("default")
                if _literal(value) and value is not None and "default" in schema:
                    default = _py_repr(value)
                else:
                    default = "None"
                    if text != "Any" and "None" not in text.split(" | "):
                        text += " | None"
            about = schema.get("description")
            params.append(
                Parameter(
                    idents.of(name), name, text, is_required, default, about if isinstance(about, str) else ""
                )
            )
        unwrap = wraps_result(output_schema)
        if unwrap and isinstance(output_schema, Mapping):
            returns = annotation(output_schema["properties"]["result"])
        elif output_schema is not None and isinstance(output_schema, Mapping):
            returns = annotation(output_schema)
            returns = "dict[str, Any]" if returns == "Any" else returns
        else:
            returns = "Any"
        return cls(
            public_name,
            namespace,
            function,
            tuple(params),
            returns,
            description.strip(),
            output_schema is not None,
            destructive,
            unwrap,
            enabled,
        )

    @property
    def qualified(self) -> str:
        """How the program calls it: `namespace.function`."""
        return f"{self.namespace}.{self.function}"

    def signature(self) -> str:
        """`git.git_log(repo_path: str, max_count: int | None = None) -> Any`."""
        parts = []
        for p in self.parameters:
            parts.append(f"{p.ident}: {p.annotation}" + (f" = {p.default}" if not p.required else ""))
        return f"{self.qualified}({', '.join(parts)}) -> {self.returns}"

    def docstring(self) -> str:
        """The tool's description, its parameters, what it returns."""
        lines = [self.description or "(no description)"]
        if not self.enabled:
            lines += ["", DISABLED]
        described = [p for p in self.parameters if p.description or p.ident != p.name]
        if described:
            lines += ["", "Args:"]
            for p in described:
                sent = f" (sent as {json.dumps(p.name, ensure_ascii=False)})" if p.ident != p.name else ""
                lines.append(f"    {p.ident}{sent}: {' '.join(p.description.split())}".rstrip(": "))
        lines += [
            "",
            f"Returns: the tool's result ({self.returns})"
            if self.unwrap
            else "Returns: the tool's structured result (a dict)"
            if self.structured
            else "Returns: the tool's structured result (a dict) when it gives one, else its text (str).",
        ]
        return "\n".join(lines)

    def render(self) -> str:
        """Signature and indented docstring, as `find_tools` shows a function."""
        doc = "\n".join(
            ("    " + line) if line else "" for line in self.docstring().replace('"""', "'''").split("\n")
        )
        return f'{self.signature()}:\n    """\n{doc}\n    """'

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON arguments of a call: positional ones in signature order, keywords by their
        Python names (or the property's own name); unknown keywords are passed on as they are,
        for the router's check to judge. Arguments left out, or given as None for an optional
        parameter, are not sent (the peer applies its own default).

        Raises:
            TypeError: Too many positional arguments, or one given twice.
        """
        if len(args) > len(self.parameters):
            raise TypeError(
                f"{self.qualified}() takes {len(self.parameters)} positional arguments but {len(args)} were "
                f"given; its signature: {self.signature()}"
            )
        out: dict[str, Any] = {}
        by_ident = {p.ident: p for p in self.parameters}
        by_name = {p.name: p for p in self.parameters}
        for param, value in zip(self.parameters, args, strict=False):
            out[param.name] = value
        for key, value in kwargs.items():
            known = by_ident.get(key) or by_name.get(key)
            name = known.name if known is not None else key
            if name in out:
                raise TypeError(f"{self.qualified}() got multiple values for argument {key!r}")
            out[name] = value
        optional = {p.name for p in self.parameters if not p.required}
        return {k: v for k, v in out.items() if not (v is None and k in optional)}
