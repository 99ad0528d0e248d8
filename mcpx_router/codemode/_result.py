"""What one program may use, and what it did: limits, the calls it made, its answer (no I/O)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..model._results import truncate

__all__ = ["CallRecord", "ProgramResult", "SandboxLimits"]


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one program may use. Every limit holds whatever the program does.

    Args:
        wall_time: Seconds the whole program may take, tool calls included.
        max_memory: Bytes of heap the interpreter may hold.
        max_recursion_depth: How deep function calls may nest.
        max_calls: Tool calls (and `find_tools` calls) one program may make.
        max_output_chars: The answer (printed text, calls, result) is cut to about this many
            characters, as tool results are.
        max_printed_chars: Printed text kept (beyond it, only how much more there was).
    """

    wall_time: float = 30.0
    max_memory: int = 64 * 1024 * 1024
    max_recursion_depth: int = 200
    max_calls: int = 50
    max_output_chars: int | None = 20_000
    max_printed_chars: int = 10_000

    def __post_init__(self) -> None:
        from .._errors import UsageError

        for name in ("wall_time",):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value < math.inf):
                raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
        for name in ("max_memory", "max_recursion_depth", "max_calls", "max_printed_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive whole number, not {value!r}")
        if self.max_output_chars is not None and (
            isinstance(self.max_output_chars, bool)
            or not isinstance(self.max_output_chars, int)
            or self.max_output_chars < 64
        ):
            raise UsageError(
                "max_output_chars must be None or a whole number of at least 64, "
                f"not {self.max_output_chars!r}"
            )


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call the program made, and what became of it."""

    function: str
    """`namespace.function` (or `find_tools`)."""
    arguments: dict[str, Any]
    ok: bool
    summary: str
    """"ok", or the failure as the program was told it."""
    error_type: str | None = None


@dataclass(slots=True)
class ProgramResult:
    """What one program did: what it printed, the value of its last line, the calls it made."""

    printed: str = ""
    value: Any = None
    calls: list[CallRecord] = field(default_factory=list)
    error: str | None = None
    """Why the program stopped early (a short traceback), None when it ran to its end."""
    printed_omitted: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def text(self, limit: int | None = None) -> str:
        """The answer the model reads: the calls made, what was printed, the result or the error."""
        parts = []
        if self.calls:
            lines = [f"Calls made ({len(self.calls)}):"]
            for n, call in enumerate(self.calls, 1):
                shown_args = ", ".join(f"{k}={_short(v)}" for k, v in call.arguments.items())
                lines.append(f"{n}. {call.function}({shown_args}) -> {call.summary}")
            parts.append("\n".join(lines))
        if self.printed or self.printed_omitted:
            more = (
                f"\n[… {self.printed_omitted} more printed characters omitted …]"
                if self.printed_omitted
                else ""
            )
            parts.append("Printed:\n" + self.printed.rstrip("\n") + more)
        if self.error is not None:
            ran = " (the calls listed above ran)" if self.calls else ""
            parts.append(f"Error: the program stopped{ran}:\n{self.error}")
        elif self.value is not None or not parts:
            parts.append("Result: " + _shown(self.value))
        return truncate("\n\n".join(parts), limit)


def _shown(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any, limit: int = 80) -> str:
    text = _shown(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
