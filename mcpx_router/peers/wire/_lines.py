"""One line a stdio peer wrote, read as JSON: in time linear in its size, never deeper than
`MAX_DEPTH`, and, when it is large, in small steps that let the event loop run.

A line up to `SMALL` bytes is parsed at once by pydantic's parser (what the `mcp` SDK uses), which
gives up beyond `MAX_DEPTH` levels of nesting; such a line is parsed again by `_Walker`, which
keeps the first `MAX_DEPTH` levels and puts `TOO_DEEP` where deeper values were. A larger line is
parsed in steps (`parse_stepwise`), the event loop taking a turn every `STEP` seconds: one long
call into C would hold the loop (and, in a worker thread, the interpreter's lock) for as long.
String literals of `LONG_STRING` bytes or more are cut out of the text and decoded a slice at a
time, and the rest is read by `_Walker`, which hands each value below its top levels to `json`'s
scanner, one small call each.

One idea: reading one line of JSON within bounds of depth and of time; the slicing of long
strings and the walker share those bounds and the placeholders that join them.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Generator
from json.decoder import JSONDecodeError, scanstring  # type: ignore[attr-defined]
from json.scanner import make_scanner
from typing import Any, Final, TypeAlias, TypeVar

import anyio.lowlevel
import pydantic_core

__all__ = ["MAX_DEPTH", "SMALL", "TOO_DEEP", "TooDeep", "parse", "parse_large", "parse_stepwise"]

_T = TypeVar("_T")

MAX_DEPTH: Final = 200
"""Levels of nesting kept: as deep as the `mcp` SDK's own parser reads."""
SMALL: Final = 1 << 20
"""Lines up to this many bytes are parsed on the event loop's thread, in one step."""
LONG_STRING: Final = 1 << 18
"""A string literal this long (in bytes) in a large line is decoded a slice at a time."""
_SLICE: Final = 1 << 18
STEP: Final = 0.002
"""Seconds of work `parse_stepwise` does before the event loop gets a turn."""
_SHALLOW: Final = 3
"""Levels of a large line read step by step; deeper values are read by `json`'s C scanner."""


class TooDeep:
    """Stands where a line nested deeper than `MAX_DEPTH` levels had more."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<nested deeper than {MAX_DEPTH} levels>"


TOO_DEEP: Final = TooDeep()

_DECODER: Final = json.JSONDecoder()
_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = make_scanner(_DECODER)  # type: ignore[arg-type]
_SURROGATES: Final = re.compile("[\ud800-\udfff]")
_OPENS: Final = frozenset(":[,{")
_CLOSES: Final = frozenset(",]}:")
_SPACE: Final = re.compile(r"[ \t\n\r]*")


def parse(line: bytes) -> tuple[Any, bool]:
    """The JSON value of `line` and whether nesting was cut; ValueError if it is not JSON.

    Bytes that are not UTF-8 are read as U+FFFD; a lone surrogate escape (`"\\ud83d"`), which
    pydantic's parser refuses, is read as Python's `json` reads it.
    """
    try:
        return pydantic_core.from_json(line), False
    except ValueError as exc:
        deep = "recursion limit" in str(exc)
    text = line.decode("utf-8", "replace")
    if not deep:
        try:
            return json.loads(text), False
        except RecursionError:
            pass  # too deep for the C parser after all: read step by step below
    return _finish(_Walker(text, shallow=MAX_DEPTH).document())


def parse_large(line: bytes, keep_last: int | None = None) -> tuple[Any, bool, int]:
    """`parse` for a large line, all its steps at once (`parse_stepwise` runs them on the loop)."""
    return _finish(_large(line, keep_last))


async def parse_stepwise(line: bytes, keep_last: int | None = None) -> tuple[Any, bool, int]:
    """`parse` for a large line, giving the event loop a turn every `STEP` seconds of work.

    With `keep_last`, a message's `result.content` array keeps only its last `keep_last` items
    (the others are read and dropped as they come); the third value says how many were left out.
    """
    steps = _large(line, keep_last)
    deadline = time.perf_counter() + STEP
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: tuple[Any, bool, int] = done.value
            return result
        if time.perf_counter() >= deadline:
            await anyio.lowlevel.checkpoint()
            deadline = time.perf_counter() + STEP


Steps: TypeAlias = Generator[None, None, _T]
"""Work done in steps: each `yield` is a place where the loop may take a turn."""


def _finish(steps: Steps[_T]) -> _T:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: _T = done.value
            return result


def _large(line: bytes, keep_last: int | None) -> Steps[tuple[Any, bool, int]]:
    text = line.decode("utf-8", "replace") if len(line) <= 4 * _SLICE else (yield from _decode(line))
    token = f"\x00mcpx-router-{secrets.token_hex(8)}-"
    kept: dict[str, str] = {}
    try:
        reduced = yield from _cut_long_strings(text, token, kept)
        walker = _Walker(reduced, shallow=_SHALLOW, strings=kept, keep_last=keep_last)
        value, cut = yield from walker.document()
        if walker.used == len(kept):
            return value, cut, walker.left_out
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        pass  # not read this way: cut by hand below
    # Not JSON, or a run without quotes that was no string after all (each string cut out must
    # come back as one whole string): read the line in one step, which says what is wrong.
    return (*parse(line), 0)


def _decode(line: bytes) -> Steps[str]:
    """`line` as text, a slice at a time (a slice never ends inside a UTF-8 sequence)."""
    parts: list[str] = []
    start = 0
    while start < len(line):
        end = min(start + _SLICE, len(line))
        while end < len(line) and 0x80 <= line[end] < 0xC0:
            end += 1  # a slice ends after a whole UTF-8 sequence
        parts.append(line[start:end].decode("utf-8", "replace"))
        start = end
        yield
    return "".join(parts)


def _cut_long_strings(text: str, token: str, kept: dict[str, str]) -> Steps[str]:
    """`text` with each string literal of `LONG_STRING` characters or more replaced by a short
    placeholder, whose decoded value `kept` gets. Only long runs without a quote are looked at
    closely, so a line made of many short strings costs one search per `_SLICE` characters."""
    pieces: list[str] = []
    done = 0
    position = 0
    while True:
        yield
        window_end = position + LONG_STRING
        if window_end >= len(text):
            break
        if '"' in text[position:window_end]:
            position = text.rindex('"', position, window_end) + 1
            continue
        # No quote for LONG_STRING characters: inside a string; find where it opened and closed.
        start = _opening_quote(text, position)
        end = _closing_quote(text, window_end)
        if start is None or end is None:
            break
        if _before(text, start) not in _OPENS or _after(text, end) not in _CLOSES:
            position = end + 1  # not a string's quotes (a long array of numbers, say)
            continue
        key = f"{token}{len(kept)}"
        kept[key] = yield from _decode_literal(text, start, end)
        pieces.append(text[done:start])
        pieces.append(json.dumps(key))
        done = position = end + 1
    pieces.append(text[done:])
    return "".join(pieces)


def _opening_quote(text: str, before: int) -> int | None:
    """The quote that opens the string literal `before` is in (which holds no quote near it)."""
    index = text.rfind('"', 0, before)
    while index > 0 and _escaped(text, index):
        index = text.rfind('"', 0, index)
    return None if index < 0 else index


def _before(text: str, index: int) -> str:
    """The first character before `index` that is not white space."""
    index -= 1
    while index >= 0 and text[index] in " \t\r\n":
        index -= 1
    return text[index] if index >= 0 else ""


def _after(text: str, index: int) -> str:
    """The first character after `index` that is not white space."""
    index += 1
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return text[index] if index < len(text) else ""


def _closing_quote(text: str, start: int) -> int | None:
    index = text.find('"', start)
    while index >= 0 and _escaped(text, index):
        index = text.find('"', index + 1)
    return None if index < 0 else index


def _escaped(text: str, index: int) -> bool:
    slashes = 0
    while index - slashes - 1 >= 0 and text[index - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def _decode_literal(text: str, start: int, end: int) -> Steps[str]:
    """The value of the string literal from quote `start` to quote `end`, a slice at a time.

    A slice ends before any backslash among its last characters (and before the run of
    backslashes it belongs to), so no escape sequence is cut in two; a surrogate pair written as
    two escapes that a cut did part is joined again at the end."""
    parts: list[str] = []
    position = start + 1
    while position < end:
        stop = min(position + _SLICE, end)
        if stop < end:
            near = text.find("\\", stop - 8, stop)
            if near >= 0:
                stop = near
                while stop > position and text[stop - 1] == "\\":
                    stop -= 1
            if stop <= position:  # a slice of nothing but backslashes: the rest in one step
                stop = end
        piece = text[position:stop]
        parts.append(scanstring(f'"{piece}"', 1)[0] if "\\" in piece else piece)
        position = stop
        yield
    value = "".join(parts)
    if text.find("\\u", start, end) >= 0 and _SURROGATES.search(value) is not None:
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return value


def _openers(text: str, start: int, end: int) -> int:
    """How many `[` and `{` `text[start:end]` holds: no value there is nested deeper than that."""
    if end - start < 2 * MAX_DEPTH:  # each level takes two characters at least
        return (end - start) // 2
    return text.count("{", start, end) + text.count("[", start, end)


def _deeper_than(value: Any, room: int) -> bool:
    """Whether a container sits `room` or more levels below `value` (`value` being level 0)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level >= room:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return False


class _LastItems(deque[Any]):
    """The last `maxlen` items appended, and how many were."""

    seen = 0

    def append(self, item: Any) -> None:
        self.seen += 1
        super().append(item)


def _is_content(stack: list[tuple[Any, str | None]], depth: int) -> bool:
    """Whether the array opening now is `result.content` of a JSON-RPC message."""
    return depth == 0 and len(stack) == 2 and stack[0][1] == "result" and stack[1][1] == "content"


class _Walker:
    """Reads JSON text with an explicit stack: containers down to `shallow` levels step by step,
    each deeper value with one call to the C scanner (or, if that recurses too deep, step by step
    as well, cut below `MAX_DEPTH` levels)."""

    def __init__(
        self, text: str, *, shallow: int, strings: dict[str, str] | None = None, keep_last: int | None = None
    ) -> None:
        self._text = text
        self._shallow = shallow
        self._strings = strings or {}
        self.cut = False
        self.left_out = 0
        """Items of a tool result's `content` left out (`keep_last`)."""
        self._keep_last = keep_last
        self.used = 0
        """How many strings of `strings` were put back."""
        self._deep = False

    def document(self) -> Steps[tuple[Any, bool]]:
        value, end = yield from self._value(self._skip(0), 0)
        if self._skip(end) != len(self._text):
            raise JSONDecodeError("Extra data", self._text, self._skip(end))
        return value, self.cut

    def _skip(self, index: int) -> int:
        match = _SPACE.match(self._text, index)
        return index if match is None else match.end()

    def _value(self, index: int, depth: int) -> Steps[tuple[Any, int]]:
        if index >= len(self._text):
            raise JSONDecodeError("Expecting value", self._text, index)
        if self._text[index] in "[{":
            return (yield from self._container(index, depth))
        return self._scalar(index)

    def _scalar(self, index: int) -> tuple[Any, int]:
        text = self._text
        if text[index] == '"':
            value, end = scanstring(text, index + 1)
            return self._put_back(value), end
        try:
            scalar: tuple[Any, int] = _SCAN(text, index)
        except StopIteration:
            raise JSONDecodeError("Expecting value", text, index) from None
        return scalar

    def _container(self, index: int, depth: int) -> Steps[tuple[Any, int]]:
        """An array or object read with a stack of open containers, from `index`."""
        text = self._text
        stack: list[tuple[Any, str | None]] = []
        position = index
        turns = 0
        while True:
            turns += 1
            if not turns % 64:
                yield
            position = self._skip(position)
            char = text[position] if position < len(text) else ""
            level = depth + len(stack)
            opening = char in ("[", "{")
            scanned = False
            value: Any = None
            if opening and level >= MAX_DEPTH:
                self.cut = True
                value, position, scanned = TOO_DEEP, (yield from self._end_of(position)), True
            elif opening and level >= self._shallow and not self._strings and not self._deep:
                try:
                    value, end = _SCAN(text, position)
                except StopIteration:
                    raise JSONDecodeError("Expecting value", text, position) from None
                except RecursionError:
                    self._deep = True  # read the rest step by step
                else:
                    # Each level opens with a bracket: only a value with as many can be too deep
                    # (counted in C; brackets inside strings only make the walk happen).
                    room = MAX_DEPTH - level
                    if _openers(text, position, end) < room or not _deeper_than(value, room):
                        scanned, position = True, end
                    else:
                        self._deep = True  # read it again step by step, to cut it
            if scanned:
                pass  # the whole value was read above
            elif opening:
                container: Any = [] if char == "[" else {}
                if char == "[" and self._keep_last is not None and _is_content(stack, depth):
                    container = _LastItems(maxlen=self._keep_last)
                position = self._skip(position + 1)
                closing = "]" if char == "[" else "}"
                if position < len(text) and text[position] == closing:
                    value = container
                    position += 1
                else:
                    stack.append((container, None))
                    if char == "{":
                        position = self._key(stack, position)
                    continue
            elif position >= len(text):
                raise JSONDecodeError("Expecting value", text, position)
            else:
                value, position = self._scalar(position)
            # A value is complete: put it in its container, then close what ends here.
            while True:
                if not stack:
                    return value, position
                container, key = stack[-1]
                if isinstance(container, list | _LastItems):
                    container.append(value)
                else:
                    assert key is not None
                    container[key] = value
                position = self._skip(position)
                char = text[position] if position < len(text) else ""
                if char == ",":
                    position += 1
                    if isinstance(container, dict):
                        position = self._key(stack, self._skip(position))
                    break
                if char != ("]" if isinstance(container, list | _LastItems) else "}"):
                    raise JSONDecodeError("Expecting ',' delimiter", text, position)
                stack.pop()
                if isinstance(container, _LastItems):
                    self.left_out = container.seen - len(container)
                    container = list(container)
                value, position = container, position + 1

    def _key(self, stack: list[tuple[Any, str | None]], position: int) -> int:
        text = self._text
        if position >= len(text) or text[position] != '"':
            raise JSONDecodeError("Expecting property name enclosed in double quotes", text, position)
        key, position = scanstring(text, position + 1)
        position = self._skip(position)
        if position >= len(text) or text[position] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", text, position)
        stack[-1] = (stack[-1][0], self._put_back(key))
        return position + 1

    def _put_back(self, text: str) -> str:
        """The string cut out for the placeholder `text`, or `text` itself."""
        if self._strings and text in self._strings:
            self.used += 1
            return self._strings[text]
        return text

    def _end_of(self, index: int) -> Steps[int]:
        """Where the container opening at `index` ends (strings skipped, brackets counted)."""
        text = self._text
        depth = 0
        position = index
        while position < len(text):
            if not position % 4096:
                yield
            char = text[position]
            if char == '"':
                position = scanstring(text, position + 1)[1]
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    return position + 1
            position += 1
        raise JSONDecodeError("Unterminated container", text, index)
