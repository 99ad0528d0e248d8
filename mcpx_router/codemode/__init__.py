"""Code mode: the peers' tools as a typed Python API that the model programs against.

The model is offered `run_python(code)` and `find_tools(query)`; a program calls the tools as
functions grouped by peer, in pydantic-monty's sandbox (`pip install 'mcpx-router[codemode]'`),
and each call goes through the adapter's own dispatch (docs/code-mode.md). A family of the core:
it imports the core and `model/`; nothing of the core imports it.
"""

from ._codemode import CodeMode
from ._identifiers import identifier
from ._result import CallRecord, ProgramResult, SandboxLimits
from ._signatures import ToolFunction

__all__ = ["CallRecord", "CodeMode", "ProgramResult", "SandboxLimits", "ToolFunction", "identifier"]
