"""MCP input schemas → OpenAI strict-mode parameters, or the reasons why not (pure functions, no I/O).

Strict mode wants every property required and every object closed. An optional property therefore
becomes required and also accepts `null`; the model sends `null` where it would have left the
property out, and `strip_added_nulls` removes exactly those nulls again before the peer sees them.
Keywords strict mode does not take are dropped, and the ones that tell the model something (a
default, a length bound, an unsupported format) are written into the description instead. The
documented rules, and `check_strict` which tests a schema against them, live in `_strict_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from . import _strict_input as reading
from . import _strict_rules as rules
from ._strict_limits import limit_problems, pointer, ref_cycles, resolve_local_ref
from ._strict_outcome import StrictOutcome, strip_added_nulls
from ._strict_rules import check_strict

__all__ = ["StrictOutcome", "check_strict", "make_strict", "strip_added_nulls"]

_DEFS: Final = ("$defs", "definitions")
_SCALARS: Final = frozenset({"string", "number", "integer", "boolean", "null"})
_OPTIONAL: Final = "Optional: null means not given."


def make_strict(schema: Mapping[str, Any]) -> StrictOutcome:
    """Convert an MCP tool's input schema into OpenAI's strict subset; `schema` is not modified.

    Args:
        schema: The tool's `inputSchema` (a JSON Schema object).

    Returns:
        The strict schema with notes on what changed, or no schema and the reasons why.

    Example:
        >>> out = make_strict({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}})
        >>> out.schema["properties"]["n"]
        {'type': ['integer', 'null'], 'description': 'Default: 3. Optional: null means not given.'}
        >>> sorted(out.nullable_paths)
        ['/properties/n']
    """
    size_problem = reading.input_problem(schema)
    if size_problem:
        return StrictOutcome(None, (size_problem,))
    conv = _Converter(schema)
    out = conv.convert_root()
    if out is not None:
        conv.reasons.extend(ref_cycles(out) + limit_problems(out))
    notes = tuple(dict.fromkeys(conv.notes))
    if conv.reasons or out is None:
        return StrictOutcome(None, tuple(dict.fromkeys(conv.reasons)), notes)
    return StrictOutcome(out, (), notes, frozenset(conv.widened_pointers(out)))


class _Converter:
    """One conversion: the input root, the definitions emitted so far, reasons and notes."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self.defs: dict[str, dict[str, Any] | None] = {}
        self._names: dict[tuple[str, ...], str] = {}
        self._pending: list[tuple[tuple[str, ...], Any]] = []
        self._widened: list[dict[str, Any]] = []
        self._inlining: set[str] = set()

    def fail(self, path: tuple[str, ...], why: str) -> None:
        self.reasons.append(f"{pointer(path)}: {why}")

    def note(self, path: tuple[str, ...], what: str) -> None:
        self.notes.append(f"{pointer(path)}: {what}")

    def convert_root(self) -> dict[str, Any] | None:
        top = {k: v for k, v in self.root.items() if k not in _DEFS}
        root = self._flatten(top, ()) if "$ref" in top or "allOf" in top else top
        if root is None:
            return None
        if "anyOf" in root or "oneOf" in root:
            self.fail((), "the root is a union (anyOf/oneOf); strict mode needs a plain object there")
            return None
        if root.get("type", "object") != "object":
            self.fail(
                (), f"the root has type {reading.quoted(root.get('type'))}; strict mode needs an object"
            )
            return None
        # arguments are always an object, so a root that also allows null just loses that
        out = self.convert({**{k: v for k, v in root.items() if k != "nullable"}, "type": "object"}, ())
        while self._pending:  # definitions are converted after the tree, so $ref chains never nest calls
            parts, target = self._pending.pop()
            self.defs[self._names[parts]] = self.convert(target, parts)
        if out is None or any(d is None for d in self.defs.values()):
            return None
        if self.defs:
            out["$defs"] = dict(sorted(self.defs.items()))
        return out

    def widened_pointers(self, out: dict[str, Any]) -> list[str]:
        marked = {id(node) for node in self._widened}
        found: list[str] = []
        stack: list[tuple[Any, str]] = [(out, "")]
        while stack:
            node, at = stack.pop()
            if not isinstance(node, dict):
                continue
            if id(node) in marked:
                found.append(at)
            for key in ("properties", "$defs"):
                stack.extend((sub, f"{at}/{key}/{pointer((n,))[2:]}") for n, sub in node.get(key, {}).items())
            stack.extend((sub, f"{at}/anyOf/{i}") for i, sub in enumerate(node.get("anyOf", [])))
            stack.append((node.get("items"), f"{at}/items"))
        return found

    def _flatten(self, node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
        inlined: set[str] = set()
        merged, why = reading.flatten(node, self.root, inlined)
        if merged is not None and inlined & self._inlining:
            merged, why = None, "a recursive $ref inside allOf cannot be merged"
        if merged is None:
            self.fail(path, why)
            return None
        self.note(path, "allOf / $ref with siblings merged into one schema")
        self._inlining |= inlined
        return merged

    def _merged(self, node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
        before = set(self._inlining)
        try:
            flat = self._flatten(node, path)
            return None if flat is None else self.convert(flat, path)
        finally:
            self._inlining = before  # only the refs inlined on the way down to here are in progress

    def convert(self, node: Any, path: tuple[str, ...]) -> dict[str, Any] | None:
        """One subschema in strict form, or None after recording why it cannot be."""
        if node is True or node == {} or node is False:
            what = "no value" if node is False else "any value"
            self.fail(path, f"accepts {what}; strict mode needs a declared type")
            return None
        if not isinstance(node, Mapping):
            self.fail(path, f"is not a schema ({reading.quoted(node)[:40]})")
            return None
        members = node.get("allOf")
        if isinstance(members, list) and len(members) == 1 and set(node) <= reading.ANNOTATIONS | {"allOf"}:
            if isinstance(members[0], Mapping) and set(members[0]) == {"$ref"}:
                # pydantic v1 wraps a described $ref this way; keeping the $ref keeps recursion possible
                node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": members[0]["$ref"]}
        if "allOf" in node or ("$ref" in node and set(node) - reading.ANNOTATIONS - {"$ref"}):
            return self._merged(node, path)
        if "$ref" in node:
            out = self._ref(node["$ref"], path)
            text = self._description(node, path)
            return {"description": text, "anyOf": [out]} if out is not None and text else out
        refused = [reading.REFUSED[k] for k in reading.REFUSED if k in node]
        dependencies = node.get("dependencies", {})
        if isinstance(dependencies, Mapping) and not all(isinstance(v, list) for v in dependencies.values()):
            refused.append("schema dependencies")
        if refused:
            self.fail(path, f"uses {', '.join(refused)}, which strict mode cannot express")
            return None
        if "oneOf" in node:
            if "anyOf" in node:
                self.fail(path, "combines oneOf with anyOf")
                return None
            self.note(path, "oneOf became anyOf (strict mode has no oneOf)")
            node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
        if "anyOf" in node:
            return self._union(node, path)
        return self._typed(node, path)

    def _typed(self, node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
        types = reading.declared_types(node)
        if types is None:
            self.fail(
                path, f"type {reading.quoted(node.get('type'))[:60]} is not a JSON type or a list of them"
            )
            return None
        if not types:
            types = reading.infer_types(node)
            if not types:
                self.fail(path, "accepts any value; strict mode needs a declared type")
                return None
            self.note(path, f"type {reading.quoted(types)} inferred from the other keywords")
        if node.get("nullable") is True and "null" not in types:
            types = [*types, "null"]
        if len(types) > 1 and not set(types) <= _SCALARS:
            # object or array mixed with other types: one anyOf member per type keeps each strict
            rest = {k: v for k, v in node.items() if k not in reading.ANNOTATIONS and k != "type"}
            members = [{**rest, "type": t} if t != "null" else {"type": "null"} for t in types]
            notes = {k: node[k] for k in reading.ANNOTATIONS & node.keys() if k != "nullable"}
            return self._union({**notes, "anyOf": members}, path)
        if types == ["object"]:
            return self._object(node, path)
        return self._value(node, types, path)

    def _ref(self, ref: Any, path: tuple[str, ...]) -> dict[str, Any] | None:
        found = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
        if found is None:
            self.fail(path, f"$ref {reading.quoted(ref)[:80]} does not resolve inside this schema")
            return None
        parts, target = found
        if not parts:
            return {"$ref": "#"}
        if parts not in self._names:
            named = len(parts) == 2 and parts[0] in ("$defs", "definitions")
            base = parts[1] if named else re.sub(r"[^A-Za-z0-9_.-]", "_", "_".join(parts))
            name, n = base, 1
            while name in self._names.values():
                n += 1
                name = f"{base}_{n}"
            self._names[parts] = name
            self._pending.append((parts, target))
            if not named:
                self.note(path, f"the target of $ref {ref!r} became the definition {name!r}")
        return {"$ref": pointer(("$defs", self._names[parts]))}

    def _union(self, node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
        members = node["anyOf"]
        if not isinstance(members, list) or not members:
            self.fail(path, "anyOf must be a non-empty list")
            return None
        siblings = {k: v for k, v in node.items() if k not in reading.ANNOTATIONS and k != "anyOf"}
        if siblings:  # keywords beside anyOf hold for every member: fold them into each one
            members = [{"allOf": [siblings, m]} for m in members]
        if node.get("nullable") is True:
            members = [*members, {"type": "null"}]
        converted = [self.convert(m, (*path, "anyOf", str(i))) for i, m in enumerate(members)]
        if any(c is None for c in converted):
            return None
        text = self._description(node, path)
        return {"anyOf": converted, "description": text} if text else {"anyOf": converted}

    def _value(
        self, node: Mapping[str, Any], types: list[str], path: tuple[str, ...]
    ) -> dict[str, Any] | None:
        out: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
        extra: list[str] = []
        if "array" in types and "items" not in node:
            self.fail(path, "is an array whose items are not described")
            return None
        for key, value in node.items():
            if key in ("enum", "const"):
                if key == "enum" and not (isinstance(value, list) and value):
                    self.fail(path, "enum must be a non-empty list")
                    return None
                out[key] = reading.copy_json(value)
            elif key in rules.TYPED:
                if not self._keyword(node, key, value, types, path, out, extra):
                    return None
            elif key in reading.DESCRIBED:
                extra.append(reading.DESCRIBED[key](value))
                self.note(path, f"{key} moved into the description")
            elif key not in reading.ANNOTATIONS and key != "type":
                self.note(path, f"dropped {key!r}, which strict mode does not take")
        text = self._description(node, path, extra)
        return {**out, "description": text} if text else out

    def _keyword(
        self, node: Mapping[str, Any], key: str, value: Any, types: list[str], path: tuple[str, ...],
        out: dict[str, Any], extra: list[str],
    ) -> bool:  # fmt: skip
        """Carry one type-specific keyword over; False after recording a reason."""
        owner = next(t for t, keys in rules.FAMILIES.items() if key in keys)
        if owner not in types and not (owner == "number" and "integer" in types):
            self.note(path, f"dropped {key!r}, which does not apply to type {reading.quoted(out['type'])}")
        elif key == "items":
            if not isinstance(value, Mapping):
                self.fail(path, "items must be one schema (tuple-style arrays are not supported)")
                return False
            out["items"] = self.convert(value, (*path, "items"))
            return out["items"] is not None
        elif key == "format" and not (isinstance(value, str) and value in rules.SUPPORTED_FORMATS):
            extra.append(f"Format: {value}.")
            self.note(path, f"format {reading.quoted(value)} is not supported; moved into the description")
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            bound = node.get("minimum" if key == "exclusiveMinimum" else "maximum")
            if value and reading.is_number(bound):  # draft-04 spelling: a flag on the plain bound
                out[key] = bound
        elif key in ("minimum", "maximum") and node.get(f"exclusive{key.title()}") is True:
            pass  # carried as the exclusive bound
        elif (
            (key in ("pattern", "format") and isinstance(value, str))
            or (key in ("minItems", "maxItems") and reading.is_count(value))
            or (
                key in rules.NUMBER_KEYWORDS
                and reading.is_number(value)
                and (key != "multipleOf" or value > 0)
            )
        ):
            out[key] = value
        else:
            self.note(path, f"dropped {key} {reading.quoted(value)[:40]}, which is not a valid value")
        return True

    def _object(self, node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
        props = node.get("properties", {})
        required = node.get("required", [])
        extra_keys = node.get("additionalProperties", node.get("unevaluatedProperties"))
        if not isinstance(props, Mapping) or not (
            isinstance(required, list) and all(isinstance(r, str) for r in required)
        ):
            self.fail(path, "properties must be an object and required a list of names")
            return None
        if isinstance(extra_keys, Mapping) and extra_keys:
            self.fail(path, "is a map whose keys are not known in advance (additionalProperties is a schema)")
            return None
        if not props and extra_keys is not False and (path or extra_keys is not None):
            self.fail(path, "is a free-form object without declared properties")
            return None
        if extra_keys is not None and extra_keys is not False:
            self.note(path, "closed to undeclared properties (additionalProperties: false)")
        missing = [r for r in required if r not in props]
        if missing:
            self.fail(path, f"requires {reading.quoted(missing)} but does not describe them")
            return None
        rest = {k: v for k, v in node.items() if k not in rules.OBJECT_KEYWORDS and k not in reading.MOOT}
        out = self._value({**rest, "type": "object"}, ["object"], path)
        converted = {name: self.convert(sub, (*path, "properties", name)) for name, sub in props.items()}
        if out is None or any(c is None for c in converted.values()):
            return None
        out["properties"] = {
            name: c if name in required else self._widen(c, props[name], (*path, "properties", name))
            for name, c in converted.items()
            if c is not None
        }
        return {**out, "required": list(props), "additionalProperties": False}

    def _widen(self, out: dict[str, Any], original: Any, path: tuple[str, ...]) -> dict[str, Any]:
        """Make an optional property required but nullable, unless it took null already."""
        if reading.accepts_null(original, self.root):
            self.note(path, "optional and already nullable: made required, its null is passed on")
            return out
        text = reading.with_sentences(out.get("description", ""), [_OPTIONAL])
        kinds = reading.type_set(out.get("type"))
        if kinds and "const" not in out and set(kinds) <= _SCALARS:
            widened = {**out, "type": kinds if "null" in kinds else [*kinds, "null"]}
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                widened["enum"] = [*out["enum"], None]
        elif set(out) <= {"anyOf", "description"}:
            widened = {**out, "anyOf": [*out["anyOf"], {"type": "null"}]}
        else:
            widened = {"anyOf": [{k: v for k, v in out.items() if k != "description"}, {"type": "null"}]}
        widened["description"] = text
        self._widened.append(widened)
        self.note(path, "optional: made required, accepts null in its place")
        return widened

    def _description(
        self, node: Mapping[str, Any], path: tuple[str, ...], extra: list[str] | None = None
    ) -> str:
        sentences = list(extra or [])
        if "default" in node:
            sentences.insert(0, f"Default: {reading.quoted(node['default'])}.")
            self.note(path, "default moved into the description")
        text = node.get("description")
        if not isinstance(text, str) or not text.strip():
            title = node.get("title")
            text = title if path and isinstance(title, str) and reading.says_more(title, path[-1]) else ""
        return reading.with_sentences(text, sentences)
