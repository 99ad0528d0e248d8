"""The LangChain tests' scripted chat model and the helpers that build and read its turns.

Importing LangChain costs seconds of CPU: tests/integrations/test_langchain.py imports this module
in a fixture, on the one worker that runs those tests, not at collection on every worker.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent
from pydantic import Field

from mcpx_router.integrations.langchain import LangChainTools

Step = Callable[[list[BaseMessage]], Any]
"""A scripted turn: given the conversation, an AIMessage (or an awaitable of one, on ainvoke)."""


class ScriptedChatModel(GenericFakeChatModel):
    """`GenericFakeChatModel` with `bind_tools`: the tools each turn was bound to are recorded."""

    offered: list[list[str]]
    bound: list[list[dict[str, Any]]] = Field(default_factory=list)
    """Each turn's tools, as sent (OpenAI function format)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _record(self, kwargs: dict[str, Any]) -> Any:
        self.bound.append(kwargs.get("tools", []))
        self.offered.append([tool["function"]["name"] for tool in self.bound[-1]])
        return next(self.messages)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        step = self._record(kwargs)
        return ChatResult(generations=[ChatGeneration(message=step(messages))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        message = self._record(kwargs)(messages)
        if inspect.isawaitable(message):
            message = await message
        return ChatResult(generations=[ChatGeneration(message=message)])


def scripted(*steps: Step) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(steps), offered=[])


def calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )


def say(text: str) -> Step:
    return lambda messages: AIMessage(content=text)


def react_agent(toolset: LangChainTools, model: ScriptedChatModel) -> Any:
    # create_react_agent is deprecated in favour of langchain's create_agent (another package);
    # it is still LangGraph's prebuilt agent loop, and the one this integration is tested with.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(toolset.model(model), toolset.tool_node())


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [message for message in state["messages"] if isinstance(message, ToolMessage)]
