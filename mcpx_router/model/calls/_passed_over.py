"""The Responses output items that are not ours to answer: `dispatch` passes over them, no answer."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PASSED_OVER"]

PASSED_OVER: Mapping[str, str] = {
    # Run by the API itself: their results are already in the response.
    **dict.fromkeys(
        (
            "web_search_call",
            "file_search_call",
            "code_interpreter_call",
            "image_generation_call",
            "mcp_call",
            "mcp_list_tools",
            "program",
        ),
        "run by the API",
    ),
    # A search for deferred tools: the API's own (execution "server"), or one the client runs
    # (execution "client"), answered by a `ToolSearch` (`client_search`), or by the host's own.
    "tool_search_call": "run by the API; one with execution client is answered by a ToolSearch",
    # Built-in tools the host enabled and answers itself (a screenshot, a shell's output, a patch
    # result, an approval): nothing here can answer them.
    **dict.fromkeys(
        ("computer_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_approval_request"),
        "a built-in tool the host answers",
    ),
    # Not calls: messages, reasoning, and the answers to calls.
    **dict.fromkeys(
        (
            "message",
            "reasoning",
            "compaction",
            "compaction_trigger",
            "configuration_update",
            "additional_tools",
            "item_reference",
            "function_call_output",
            "custom_tool_call_output",
            "computer_call_output",
            "local_shell_call_output",
            "shell_call_output",
            "apply_patch_call_output",
            "mcp_approval_response",
            "tool_search_output",
            "program_output",
        ),
        "not a call",
    ),
}
"""Responses item types `dispatch` passes over without an answer, with the reason."""
