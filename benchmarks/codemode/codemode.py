"""Code mode against function calling: what is sent to the model for one multi-step task.

The task takes three dependent calls across two peers (list the commits of a repository, show
the newest, file an issue quoting it) among N tools (the task's 3, the rest generated filler
tools of the relevance evaluation, `benchmarks/ranking/_labelled.py`). The model is the scripted
OpenAI-compatible endpoint of the tests (`tests/support/_openai_replay.py`), driven by the real
`openai` SDK over loopback; both sides get the same answers from the same in-process peers.

- baseline: function calling, every tool offered in every request (`get_openai_tools(max_tools=
            None)`), four requests: three calls one after another, then the answer;
- budget:   function calling with the adapter's default budget of 128 tools, chosen by relevance
            to the conversation (what a real request at 1,000 tools must do: OpenAI takes 128);
- subject:  code mode (`CodeMode.chat_tools()`), three requests: `find_tools`, one `run_python`
            program making the three calls, then the answer.

The figure is the prompt size of the task: the sum over its requests of the JSON the SDK sent,
in tokens estimated as 1 per 4 characters (as the evaluation harness estimates where an endpoint
reports no usage; the scripted endpoint reports none). Target at 1,000 tools: code mode at most a
quarter of function calling's (docs/code-mode.md).
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import mcp
import mcp_types as mt
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.codemode import CodeMode
from tests.support._model_peers import RecordingPeer, text_result
from tests.support._openai_replay import CHAT, chat_completion, replay_openai, tool_call
from tests.support.big_catalogue import filler_peers

from .._common import Row, Settings

NAME = "codemode"
SIZES = (10, 100, 1000)
TARGET = 0.25
QUESTION = "File an issue quoting the newest commit of /srv/app."
COMMITS = [{"id": "a1b2c3", "message": "Fix the login timeout"}, {"id": "d4e5f6", "message": "Add audit log"}]


def task_peers() -> dict[str, RecordingPeer]:
    async def log(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(json.dumps({"commits": COMMITS}))

    async def show(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(
            f"commit {arguments['revision']}\n\n    Fix the login timeout\n" + "diff ...\n" * 20
        )

    async def create(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(f"issue #101 created: {arguments['title']}")

    path = {"repo_path": {"type": "string", "description": "Path to the Git repository"}}
    git = RecordingPeer("git")
    git.tool("git_log", {"type": "object", "properties": path, "required": ["repo_path"]}, log, "Commit log.")
    git.tool(
        "git_show",
        {
            "type": "object",
            "properties": {**path, "revision": {"type": "string"}},
            "required": ["repo_path", "revision"],
        },
        show,
        "Show one commit.",
    )
    tracker = RecordingPeer("tracker")
    tracker.tool(
        "create_issue",
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title"],
        },
        create,
        "Create an issue in the tracker.",
    )
    return {"git": git, "tracker": tracker}


def _tokens(bodies: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(body, ensure_ascii=False)) for body in bodies) // 4


async def _drive(client: AsyncOpenAI, tools: Any, answer: Any) -> None:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    while True:
        chosen = await tools(messages) if callable(tools) else tools
        reply = await client.chat.completions.create(model="m", messages=messages, tools=chosen)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return
        messages += await answer(message.tool_calls)


async def _function_calling(adapter: OpenAIPeerToolAdapter, budget: bool) -> tuple[int, int]:
    log, show, create = (
        adapter.public_name("git", "git_log"),
        adapter.public_name("git", "git_show"),
        adapter.public_name("tracker", "create_issue"),
    )
    script: list[Any] = [
        chat_completion({"tool_calls": [tool_call("c1", log, json.dumps({"repo_path": "/srv/app"}))]}),
        chat_completion(
            {
                "tool_calls": [
                    tool_call("c2", show, json.dumps({"repo_path": "/srv/app", "revision": "a1b2c3"}))
                ]
            }
        ),
        chat_completion(
            {"tool_calls": [tool_call("c3", create, json.dumps({"title": "a1b2c3: Fix the login timeout"}))]}
        ),
        chat_completion({"content": "Filed issue #101."}),
    ]

    async def tools(messages: list[Any]) -> Any:
        if budget:
            return list(adapter.get_openai_tools(relevant_to=messages))
        return list(adapter.get_openai_tools(max_tools=None))

    with replay_openai(script) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="x", max_retries=0) as client:
            await _drive(client, tools, adapter.dispatch)
    bodies = replay.bodies(CHAT)
    return _tokens(bodies), len(bodies)


PROGRAM = """\
log = git.git_log(repo_path="/srv/app")
newest = json.loads(log)["commits"][0]
shown = git.git_show(repo_path="/srv/app", revision=newest["id"])
tracker.create_issue(title=newest["id"] + ": " + newest["message"], body=shown[:200])
"""


async def _code_mode(adapter: OpenAIPeerToolAdapter) -> tuple[int, int]:
    script: list[Any] = [
        chat_completion(
            {"tool_calls": [tool_call("c1", "find_tools", json.dumps({"query": "git commit log"}))]}
        ),
        chat_completion(
            {"tool_calls": [tool_call("c2", "run_python", json.dumps({"code": "import json\n" + PROGRAM}))]}
        ),
        chat_completion({"content": "Filed issue #101."}),
    ]
    async with CodeMode(adapter) as code:
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="x", max_retries=0) as client:
                await _drive(client, list(code.chat_tools()), code.dispatch)
    bodies = replay.bodies(CHAT)
    assert "issue #101 created" in json.dumps(bodies[-1]), "the program did not run the task"
    return _tokens(bodies), len(bodies)


async def run(settings: Settings) -> list[Row]:
    rows = []
    for size in SIZES:
        async with AsyncExitStack() as stack:
            adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
            peers = {**task_peers(), **(filler_peers(size - 3) if size > 3 else {})}
            for name, peer in peers.items():
                await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
            every, every_turns = await _function_calling(adapter, budget=False)
            budgeted, _ = await _function_calling(adapter, budget=True)
            coded, code_turns = await _code_mode(adapter)
        print(
            f"{size} tools: function calling {every} tokens in {every_turns} requests "
            f"({budgeted} with the 128-tool budget); code mode {coded} in {code_turns}"
        )
        for label, baseline in (("every tool", every), ("128-tool budget", budgeted)):
            if label == "128-tool budget" and size <= 128:
                continue
            ratio = coded / baseline
            rows.append(
                Row(
                    NAME,
                    f"prompt tokens per task, {size} tools, code mode vs function calling ({label})",
                    f"{baseline:,}",
                    f"{coded:,}",
                    f"{ratio:.3f}",
                    f"<= {TARGET}" if size == 1000 else "",
                    (ratio <= TARGET) if size == 1000 else None,
                )
            )
    return rows
