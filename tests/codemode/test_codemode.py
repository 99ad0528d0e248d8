"""Code mode against real in-process MCP peers and the real pydantic-monty sandbox.

Every program here runs in a Monty worker process; every call it makes reaches a real MCP
server through the adapter's dispatch. Both anyio backends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp
import mcp_types as mt
import pytest
from mcp.server.mcpserver import MCPServer
from openai import AsyncOpenAI
from pydantic import Field

from mcpx_router import OpenAIPeerToolAdapter, UsageError
from mcpx_router.codemode import CodeMode, SandboxLimits
from mcpx_router.loop import run_chat, run_responses

from ..support._model_peers import RecordingPeer, text_result
from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    chat_completion,
    function_call,
    output_message,
    replay_openai,
    response,
    tool_call,
)

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

COMMITS = [
    {"id": "a1b2c3", "message": "Fix the login timeout", "author": "ada"},
    {"id": "d4e5f6", "message": "Add the audit log", "author": "linus"},
    {"id": "0719aa", "message": "Initial commit", "author": "ada"},
]


def git_server() -> MCPServer:
    server = MCPServer("git")

    @server.tool()
    def git_log(
        repo_path: Annotated[str, Field(description="Path to the Git repository")],
        max_count: Annotated[int, Field(ge=1, le=50, description="How many commits")] = 10,
    ) -> dict[str, Any]:
        """Show the commit log of a repository, newest first."""
        return {"repo": repo_path, "commits": COMMITS[:max_count]}

    @server.tool()
    def git_show(repo_path: str, revision: str) -> str:
        """Show one commit as text."""
        found = [c for c in COMMITS if c["id"] == revision]
        return f"commit {revision}\n{found[0]['message']}" if found else f"no commit {revision}"

    return server


def tracker_peer() -> RecordingPeer:
    async def create(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(f"issue #{len(arguments['title'])} created: {arguments['title']}")

    async def broken(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result("the tracker database is read-only today", is_error=True)

    async def slow(arguments: dict[str, Any]) -> mt.CallToolResult:
        await anyio.sleep(5)
        return text_result("late")

    title = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title"],
    }
    return (
        RecordingPeer("tracker")
        .tool("create-issue", title, create, "Create an issue in the tracker.")
        .tool("close", {"type": "object", "properties": {"id": {"type": "integer"}}}, broken)
        .tool("slow", {"type": "object", "properties": {}}, slow)
    )


@asynccontextmanager
async def code_mode(
    limits: SandboxLimits | None = None, code_options: dict[str, Any] | None = None, **adapter_options: Any
) -> AsyncIterator[tuple[CodeMode, OpenAIPeerToolAdapter, RecordingPeer]]:
    tracker = tracker_peer()
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(**adapter_options))
        await adapter.add_peer("git", await stack.enter_async_context(mcp.Client(git_server())))
        await adapter.add_peer("tracker", await stack.enter_async_context(mcp.Client(tracker.server())))
        code = await stack.enter_async_context(CodeMode(adapter, limits=limits, **(code_options or {})))
        yield code, adapter, tracker


async def test_a_program_makes_dependent_calls_across_peers_and_gets_python_values() -> None:
    program = """
log = git.git_log(repo_path="/srv/app", max_count=2)
latest = log["commits"][0]
text = git.git_show("/srv/app", latest["id"])
made = tracker.create_issue(title="Review " + latest["id"], body=text)
print(type(log).__name__, type(text).__name__, len(log["commits"]))
{"created": made, "first_line": text.splitlines()[0]}
"""
    async with code_mode() as (code, _, tracker):
        result = await code.run(program)
    assert result.error is None, result.error
    assert result.value == {"created": "issue #13 created: Review a1b2c3", "first_line": "commit a1b2c3"}
    assert result.printed == "dict str 2\n"
    assert [c.function for c in result.calls] == ["git.git_log", "git.git_show", "tracker.create_issue"]
    assert result.calls[1].arguments == {"repo_path": "/srv/app", "revision": "a1b2c3"}
    # The tool's own name ("create-issue") is what the peer is called with.
    assert tracker.calls == [
        ("create-issue", {"title": "Review a1b2c3", "body": "commit a1b2c3\nFix the login timeout"})
    ]
    text = result.text()
    assert text.startswith('Calls made (3):\n1. git.git_log(repo_path="/srv/app", max_count=2) -> ok')
    assert "Printed:\ndict str 2" in text and 'Result: {"created": "issue #13' in text


async def test_a_failed_call_raises_an_exception_carrying_the_routers_explanation() -> None:
    program = """
out = []
try:
    tracker.close(id=4)
except Exception as e:
    out.append(str(e))
try:
    tracker.create_issue(body="no title")
except Exception as e:
    out.append(str(e))
try:
    tracker.slow()
except TimeoutError as e:
    out.append("timeout: " + str(e))
out
"""
    async with code_mode(call_timeout=0.5) as (code, _, tracker):
        result = await code.run(program)
    assert result.error is None, result.error
    closed, refused, late = result.value
    assert closed == "tracker.close reported a failure: the tracker database is read-only today"
    assert refused.startswith("tracker.create_issue was not called. The arguments do not match")
    assert "'title' is a required property" in refused
    assert late.startswith("timeout: tracker.slow") and "0.5" in late
    assert [c.error_type for c in result.calls] == ["tool_error", "invalid_arguments", "timeout"]
    # The call the schema refused never reached the peer.
    assert [name for name, _ in tracker.calls] == ["close", "slow"]


async def test_names_follow_peers_as_they_join_and_leave_and_a_lost_peer_is_answered_honestly() -> None:
    async with code_mode() as (code, adapter, _), AsyncExitStack() as stack:
        docs = MCPServer("docs")

        @docs.tool(name="page.get")
        def page_get(path: str) -> str:
            """Read one page."""
            return f"{path}: body"

        assert "docs (" not in code.description()
        await adapter.add_peer("docs", await stack.enter_async_context(mcp.Client(docs)))
        assert "docs (1): page_get" in code.description()
        assert code.signature("docs", "page.get").startswith("docs.page_get(path: str) -> str:")
        first = await code.run('docs.page_get(path="a")')
        assert first.value == "a: body"

        # A tool that makes its own peer leave while the program runs: the next call is answered
        # by the router with what became of it, and the program can read that.
        leaver = RecordingPeer("leaver")

        async def leave(arguments: dict[str, Any]) -> mt.CallToolResult:
            await adapter.remove_peer("docs", reason="shut down for maintenance")
            return text_result("bye")

        leaver.tool("leave", {"type": "object", "properties": {}}, leave)
        await adapter.add_peer("leaver", await stack.enter_async_context(mcp.Client(leaver.server())))
        program = (
            'd = docs\nleaver.leave()\ntry:\n    d.page_get(path="b")\n'
            "except Exception as e:\n    msg = str(e)\nmsg"
        )
        result = await code.run(program)
        assert result.error is None, result.error
        assert result.value.startswith("docs.page_get failed:")
        assert "is not available now: shut down for maintenance" in result.value
        gone = await code.run('docs.page_get(path="c")')
        assert gone.error is not None and "NameError: name 'docs' is not defined" in gone.error
        assert "docs (" not in code.description()


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ('import os\nos.listdir("/")', "PermissionError"),
        ('open("/etc/passwd").read()', "PermissionError"),
        ("import socket", "ModuleNotFoundError: No module named 'socket'"),
        ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
        ('import os\nos.getenv("HOME")', "'os.getenv' is not supported"),
        ('import os\nos.environ["HOME"]', "'os.environ' is not supported"),
        ('__import__("os").system("true")', "NameError: name '__import__' is not defined"),
        ("dir(git)", "NameError: name 'dir' is not defined"),
        ("git.__class__.__init__", "AttributeError"),
        ("while True:\n    pass", "TimeoutError"),
        ("x = [0] * 10**9", "MemoryError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("for i in range(100):\n    git.git_show(repo_path='/', revision=str(i))", "made its 5 calls"),
        ("x = (1", "SyntaxError"),
        ("import time\ntime.sleep(100)", "TimeoutError: sleep limit exceeded"),
        # Whichever clock stops it first (the whole program's, or the interpreter's own).
        ("import time\nwhile True:\n    time.sleep(0.01)", "TimeoutError"),
    ],
)
async def test_hostile_or_broken_programs_are_stopped_with_a_readable_error(
    program: str, expected: str
) -> None:
    limits = SandboxLimits(wall_time=2.0, max_memory=20_000_000, max_recursion_depth=100, max_calls=5)
    async with code_mode(limits) as (code, _, tracker):
        result = await code.run(program)
        again = await code.run("1 + 1")  # the sandbox still serves the next program
    assert result.error is not None and expected in result.error, result.error
    assert result.text().startswith(("Error: the program stopped", "Calls made"))
    assert tracker.calls == []
    assert again.value == 2


async def test_the_wall_time_limit_counts_the_time_spent_in_tool_calls() -> None:
    async with code_mode(SandboxLimits(wall_time=1.0)) as (code, _, tracker):
        start = anyio.current_time()
        result = await code.run("tracker.slow()")
        took = anyio.current_time() - start
    assert result.error is not None and "ran past its 1 s limit" in result.error
    assert took < 4
    assert [name for name, _ in tracker.calls] == ["slow"]


async def test_what_the_program_prints_and_returns_is_capped() -> None:
    limits = SandboxLimits(max_printed_chars=100, max_output_chars=300)
    async with code_mode(limits) as (code, _, _):
        result = await code.run('for i in range(1000):\n    print("line", i)\n"x" * 5000')
    assert len(result.printed) == 100 and result.printed_omitted > 5000
    text = result.text(limits.max_output_chars)
    assert len(text) < 500 and "output truncated" in text and "more printed characters omitted" in text


async def test_a_call_that_ran_is_listed_and_never_run_again() -> None:
    async with code_mode() as (code, _, tracker):
        result = await code.run('tracker.create_issue(title="once")\nraise ValueError("then it failed")')
    assert tracker.calls == [("create-issue", {"title": "once"})]
    text = result.text()
    assert '1. tracker.create_issue(title="once") -> ok' in text
    assert "(the calls listed above ran)" in text and "ValueError: then it failed" in text


async def test_find_tools_returns_ranked_signatures_inside_and_outside_the_program() -> None:
    async with code_mode() as (code, _, _):
        found = await code.find_tools("commit log of a repository")
        inside = await code.run('find_tools("commit log of a repository")')
        nothing = await code.find_tools("zebra xylophone")
    # The schema's default went into the description in the conversion the model sees.
    assert found.startswith("git.git_log(repo_path: str, max_count: int | None = None) -> dict[str, Any]:")
    assert "Path to the Git repository" in found
    assert inside.value == found
    assert "No function matches" in nothing


async def test_host_allow_keeps_tools_out_of_the_sandbox() -> None:
    async with code_mode() as (_, adapter, tracker):
        limited = CodeMode(adapter, allow=lambda tool: tool.peer != "tracker")
        async with limited:
            result = await limited.run('tracker.create_issue(title="x")')
            assert "tracker" not in limited.description()
    assert result.error is not None and "NameError" in result.error
    assert tracker.calls == []


async def test_running_outside_async_with_is_a_usage_error() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UsageError, match="async with CodeMode"):
            await CodeMode(adapter).run("1")


def _monty_children() -> set[int]:
    found = set()
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"monty" in cmdline:
                found.add(int(pid))
    return found


async def test_leaving_async_with_ends_the_sandbox_workers() -> None:
    before = _monty_children()
    async with code_mode() as (code, _, _):
        assert (await code.run("1")).value == 1
        assert _monty_children() - before
    for _ in range(200):  # the pool reaps its workers as it closes; give them a moment to go
        if not _monty_children() - before:
            break
        await anyio.sleep(0.05)
    assert _monty_children() - before == set()


async def test_the_model_drives_code_mode_through_the_openai_sdk() -> None:
    program = 'log = git.git_log(repo_path="/srv/app", max_count=1)\nlog["commits"][0]["message"]'
    script = [
        chat_completion(
            {"content": None, "tool_calls": [tool_call("c1", "find_tools", '{"query": "git log"}')]}
        ),
        chat_completion(
            {"content": None, "tool_calls": [tool_call("c2", "run_python", json.dumps({"code": program}))]}
        ),
        chat_completion({"content": "The latest commit fixes the login timeout."}),
    ]
    async with code_mode() as (code, _, _):
        with replay_openai(script) as replay:
            client = AsyncOpenAI(base_url=replay.base_url, api_key="test", max_retries=0)
            messages: list[Any] = [{"role": "user", "content": "What did the latest commit do?"}]
            for _ in range(3):
                reply = await client.chat.completions.create(
                    model="m",
                    messages=messages,
                    tools=list(code.chat_tools()),  # type: ignore[arg-type]
                )
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                messages += await code.dispatch(message.tool_calls)
            await client.close()
    bodies = replay.bodies(CHAT)
    assert len(bodies) == 3
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["run_python", "find_tools"]
    assert "git (2): git_log, git_show" in bodies[0]["tools"][0]["function"]["description"]
    found, ran = bodies[2]["messages"][2], bodies[2]["messages"][4]
    assert found["role"] == "tool" and found["tool_call_id"] == "c1"
    assert found["content"].startswith("git.git_log(repo_path: str")
    assert ran["tool_call_id"] == "c2"
    assert ran["content"] == (
        'Calls made (1):\n1. git.git_log(repo_path="/srv/app", max_count=1) -> ok\n\n'
        'Result: "Fix the login timeout"'
    )
    assert message.content == "The latest commit fixes the login timeout."


async def test_the_models_other_calls_get_an_error_answer_each() -> None:
    async with code_mode() as (code, _, _):
        answers = await code.dispatch(
            [
                {"id": "a", "type": "function", "function": {"name": "git__git_log", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "run_python", "arguments": "{not json"}},
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "run_python", "arguments": '{"code": ""}'},
                },
            ]
        )
    assert [a["tool_call_id"] for a in answers] == ["a", "b", "c"]
    assert answers[0]["content"].startswith("Error: 'git__git_log' is not a function you can call")
    assert all(a["content"].startswith("Error:") for a in answers)


@pytest.mark.parametrize(
    ("name", "direct_calls", "shown"),
    [
        # A tool's public name, or its name in a program, with direct calls off: its signature.
        ("git__git_log", False, ["it is:\ngit.git_log(repo_path: str, max_count: int"]),
        ("tracker.create_issue", False, ["it is:\ntracker.create_issue(title: str"]),
        # A made-up name (direct calls on or off): the functions its words rank first, as the
        # tool search ranks them.
        ("show_commit", True, ["the closest", "git.git_show(repo_path: str, revision: str)"]),
        ("createIssue", True, ["the closest", "tracker.create_issue("]),
        ("createIssue", False, ["the closest", "tracker.create_issue("]),
        # Nothing near: no function is guessed.
        ("zzqx", True, ["Find the functions a program can call by what they do."]),
    ],
)
async def test_a_call_of_a_function_not_offered_is_answered_with_what_a_program_would_call(
    name: str, direct_calls: bool, shown: list[str]
) -> None:
    async with code_mode(code_options={"direct_calls": direct_calls}) as (code, _, tracker):
        [answer] = await code.dispatch(
            [{"id": "a", "type": "function", "function": {"name": name, "arguments": '{"x": 1}'}}]
        )
    text = answer["content"]
    assert text.startswith(f"Error: {name!r} is not a function you can call; call run_python(code)")
    assert all(part in text for part in shown), text
    assert tracker.calls == []  # answered, never run
    if name == "zzqx":
        assert "(" not in text.split("find_tools(query)")[-1]  # no signature at all


DIRECT = {"direct_calls": True}


@pytest.mark.parametrize("name", ["tracker__create-issue", "tracker.create_issue"])
async def test_a_tool_called_by_its_own_name_runs_as_the_one_line_program(name: str) -> None:
    async with code_mode(code_options=DIRECT) as (code, _, tracker):
        [answer] = await code.dispatch(
            [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": name, "arguments": '{"title": "Login fails"}'},
                }
            ]
        )
        outcome = await code.call(name, {"title": "Retry"})  # as a framework integration calls it
    text = answer["content"]
    assert text.startswith(
        f"{name!r} is not one of your functions, so it ran as the program "
        "`tracker.create_issue(title='Login fails')` (next time call run_python(code)"
    ), text
    assert 'Calls made (1):\n1. tracker.create_issue(title="Login fails") -> ok' in text
    assert text.endswith('Result: "issue #11 created: Login fails"')
    assert not outcome.is_error and "issue #5 created: Retry" in outcome.text
    # Each call ran once, with the arguments as the model gave them.
    assert tracker.calls == [("create-issue", {"title": "Login fails"}), ("create-issue", {"title": "Retry"})]


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        # The router's check refuses it before the peer: the answer adds the signature.
        ("tracker__create-issue", '{"body": "no title"}', "Its signature:\ntracker.create_issue(title: str"),
        # The peer's own failure: the router's explanation, as a program would catch it.
        (
            "tracker.close",
            '{"id": 3}',
            "RuntimeError: tracker.close reported a failure: the tracker database is read-only",
        ),
        # Keys that are no Python names are shown as the program would pass them.
        (
            "tracker.create_issue",
            '{"title": "x", "due-date": 1}',
            "`tracker.create_issue(**{'title': 'x', 'due-date': 1})`",
        ),
    ],
)
async def test_a_direct_call_that_fails_says_why_as_the_program_would_be_told(
    name: str, arguments: str, said: str
) -> None:
    async with code_mode(code_options=DIRECT) as (code, _, tracker):
        [answer] = await code.dispatch(
            [{"id": "a", "type": "function", "function": {"name": name, "arguments": arguments}}]
        )
    text = answer["content"]
    assert text.startswith(f"{name!r} is not one of your functions, so it ran as the program"), text
    assert said in text, text
    if "due-date" not in arguments:
        assert "Error: the program stopped" in text
    assert len(tracker.calls) == (1 if name == "tracker.close" else 0 if "body" in arguments else 1)


async def test_arguments_that_are_no_object_are_answered_with_the_signature_and_run_nothing() -> None:
    async with code_mode(code_options=DIRECT) as (code, _, tracker):
        [answer] = await code.dispatch(
            [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "tracker.create_issue", "arguments": "[1, 2]"},
                }
            ]
        )
    text = answer["content"]
    assert text.startswith("Error: 'tracker.create_issue' is not a function you can call"), text
    assert "it is:\ntracker.create_issue(title: str" in text
    assert tracker.calls == []


async def test_a_direct_call_of_a_destructive_tool_is_refused_or_asked_about_as_in_a_program() -> None:
    store = _hinted_peer()
    asked: list[dict[str, Any]] = []

    def refuse(function: Any, arguments: dict[str, Any]) -> bool:
        asked.append(arguments)
        return False

    call = [{"id": "a", "type": "function", "function": {"name": "store__wipe", "arguments": '{"key": "k"}'}}]
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        await adapter.add_peer("store", await stack.enter_async_context(mcp.Client(store.server())))
        [off] = await (await stack.enter_async_context(CodeMode(adapter, **DIRECT))).dispatch(call)
        asking = CodeMode(adapter, approve=refuse, **DIRECT)
        [refused] = await (await stack.enter_async_context(asking)).dispatch(call)
        trusting = await stack.enter_async_context(CodeMode(adapter, allow_destructive=True, **DIRECT))
        [ran] = await trusting.dispatch(call)
    assert (
        "PermissionError: store.wipe was not called: the tool declares itself destructive" in off["content"]
    )
    assert (
        "PermissionError: store.wipe was not called: the host did not approve this call" in refused["content"]
    )
    assert asked == [{"key": "k"}]
    assert 'Result: "wipe ran"' in ran["content"]
    assert store.calls == [("wipe", {"key": "k"})]  # only the call the host allowed reached the peer


async def test_a_long_made_up_name_is_not_echoed_whole() -> None:
    name = "show_commit_" * 500
    async with code_mode() as (code, _, _):
        [answer] = await code.dispatch([{"id": "a", "type": "function", "function": {"name": name}}])
    text = answer["content"]
    assert f"(cut, of {len(name):,} characters) is not a function you can call" in text
    assert len(text) < 600 and "git.git_show(" in text


async def test_a_missing_function_of_a_small_namespace_is_answered_with_all_of_its_functions() -> None:
    async with code_mode() as (code, _, _):
        small = await code.run("git.fetch_everything()")
        close = await code.run("git.git_shw()")
    assert small.error is not None and close.error is not None
    assert "git has no function 'fetch_everything'; it has git_log, git_show" in small.error
    assert "did you mean git.git_show?" in close.error


async def test_a_missing_function_of_a_large_namespace_points_to_find_tools_only() -> None:
    big = RecordingPeer("big")
    for i in range(13):
        big.tool(f"report_{i}", {"type": "object", "properties": {}}, _ok, f"Report number {i}.")
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        await adapter.add_peer("big", await stack.enter_async_context(mcp.Client(big.server())))
        code = await stack.enter_async_context(CodeMode(adapter))
        result = await code.run("big.fetch_everything()")
    assert result.error is not None
    assert "big has no function 'fetch_everything' (find_tools(query) lists what there is)" in result.error


async def _ok(arguments: dict[str, Any]) -> mt.CallToolResult:
    return text_result("ok")


PROGRAM = 'log = git.git_log(repo_path="/srv/app", max_count=1)\nlog["commits"][0]["id"]'


async def test_run_chat_and_run_responses_offer_code_mode_in_place_of_the_tools() -> None:
    chat_script: list[Any] = [
        chat_completion(
            {"content": None, "tool_calls": [tool_call("c1", "run_python", json.dumps({"code": PROGRAM}))]}
        ),
        chat_completion({"content": "a1b2c3"}),
    ]
    responses_script: list[Any] = [
        response([function_call("r1", "run_python", json.dumps({"code": PROGRAM}))]),
        response([output_message("a1b2c3")]),
    ]
    async with code_mode() as (code, adapter, _):
        with replay_openai(chat_script + responses_script) as replay:
            client = AsyncOpenAI(base_url=replay.base_url, api_key="test", max_retries=0)
            chat = await run_chat(
                client, adapter, model="m", messages=[{"role": "user", "content": "newest?"}], code_mode=code
            )
            answered = await run_responses(client, adapter, model="m", input="newest?", code_mode=code)
            with pytest.raises(UsageError, match="leave tool_search off"):
                await run_chat(client, adapter, model="m", messages=[], code_mode=code, tool_search=True)
            await client.close()
    assert chat.text == "a1b2c3" and chat.tool_calls == 1
    assert answered.text == "a1b2c3" and answered.tool_calls == 1
    for path, key in ((CHAT, "messages"), (RESPONSES, "input")):
        first, second = replay.bodies(path)
        names = [t.get("name") or t["function"]["name"] for t in first["tools"]]
        assert names == ["run_python", "find_tools"]
        answers = [str(item.get("content") or item.get("output")) for item in second[key]]
        assert any(a.endswith('Result: "a1b2c3"') for a in answers)


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ('f = git.git_log\nf(repo_path="/r")["repo"]', "/r"),
        ('[hasattr(git, "git_log"), hasattr(git, "nothing")]', [True, False]),
        ('git.git_log(**{"repo_path": "/k", "max_count": 1})["commits"][0]["id"]', "a1b2c3"),
        (
            'import asyncio\nasync def m():\n    return git.git_log(repo_path="/a")\n'
            'asyncio.run(m())["repo"]',
            "/a",
        ),
    ],
)
async def test_functions_are_values_and_calls_take_any_python_call_form(program: str, expected: Any) -> None:
    async with code_mode() as (code, _, _):
        result = await code.run(program)
    assert result.error is None, result.error
    assert result.value == expected


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        ('b"x"', "a Python bytes is not a JSON value"),
        ("{1, 2}", "a Python set is not a JSON value"),
        ('float("nan")', "nan is not a finite number"),
        ("git", "a Python ToolNamespace is not a JSON value"),
    ],
)
async def test_arguments_json_cannot_carry_are_refused_before_the_peer(argument: str, said: str) -> None:
    async with code_mode() as (code, _, tracker):
        result = await code.run(f"tracker.create_issue(title={argument})")
    assert result.error is not None and said in result.error
    assert "RuntimeError: tracker.create_issue was not called." in result.error
    assert tracker.calls == []


async def test_a_stdio_peer_through_the_router_its_tools_changing_and_its_loss_mid_call() -> None:
    from mcpx_router import Router

    from ..support.router_support import tiny

    async with Router() as router, CodeMode(router.adapter) as code:
        await router.join("tiny-server", tiny())
        first = await code.run('[tiny_server.echo(text="hi"), int(tiny_server.pid()) > 0]')
        assert first.value == ["hi", True], first.error
        added = await code.run('tiny_server.add_tool(name="new-tool")')
        assert added.error is None, added.error
        for _ in range(200):  # the peer's list_changed makes the Router list its tools again
            if "new_tool" in code.description():
                break
            await anyio.sleep(0.05)
        second = await code.run('tiny_server.new_tool(text="fresh")')
        assert second.value == "fresh", second.error

        async def leave_soon() -> None:
            await anyio.sleep(0.5)
            await router.leave("tiny-server")

        async with anyio.create_task_group() as tg:
            tg.start_soon(leave_soon)
            lost = await code.run(
                "try:\n    tiny_server.sleep(seconds=10)\nexcept Exception as e:\n    said = str(e)\nsaid"
            )
    assert lost.error is None, lost.error
    # Honest: the call was sent, so it may have run.
    assert lost.value == (
        "tiny_server.sleep: peer 'tiny-server' left while the call ran; it may or may not have taken effect"
    )
    assert lost.calls[0].error_type == "peer_unavailable"


async def test_the_hosts_approval_is_asked_before_each_destructive_call_only() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approve(function: Any, arguments: dict[str, Any]) -> bool:
        asked.append((function.qualified, arguments))
        if arguments.get("title") == "boom":
            raise RuntimeError("the approval service is down")
        return arguments.get("title") == "fine"

    async with code_mode() as (_, adapter, tracker), AsyncExitStack() as stack:
        reader = RecordingPeer("reader")
        reader.tools.append(
            mt.Tool(
                name="peek",
                description="Read only.",
                input_schema={"type": "object", "properties": {}},
                annotations=mt.ToolAnnotations(read_only_hint=True),
            )
        )
        reader.handlers["peek"] = lambda arguments: _text("seen")
        await adapter.add_peer("reader", await stack.enter_async_context(mcp.Client(reader.server())))
        guarded = await stack.enter_async_context(CodeMode(adapter, approve=approve))
        program = """
out = [reader.peek(), tracker.create_issue(title="fine")]
for title in ["refused", "boom"]:
    try:
        tracker.create_issue(title=title)
    except PermissionError as e:
        out.append(str(e))
out
"""
        result = await guarded.run(program)
    assert result.error is None, result.error
    assert result.value == [
        "seen",
        "issue #4 created: fine",
        "tracker.create_issue was not called: the host did not approve this call",
        "tracker.create_issue was not called: the host's approval check failed, so the call was not made",
    ]
    # The read-only tool was never asked about; the refused calls never reached the peer.
    assert [name for name, _ in asked] == ["tracker.create_issue"] * 3
    assert tracker.calls == [("create-issue", {"title": "fine"})]
    assert [c.error_type for c in result.calls] == [None, None, "not_approved", "not_approved"]


async def _text(value: str) -> mt.CallToolResult:
    return text_result(value)


async def test_a_group_of_equivalent_tools_is_the_groups_namespace() -> None:
    from mcpx_router.testing import search_agent

    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(
            OpenAIPeerToolAdapter(aliases={"search": ["web/search", "news/search"]})
        )
        await adapter.add_peer("web", await stack.enter_async_context(mcp.Client(search_agent())))
        await adapter.add_peer("news", await stack.enter_async_context(mcp.Client(search_agent())))
        code = await stack.enter_async_context(CodeMode(adapter))
        assert "groups (1): search" in code.description()
        found = await code.find_tools("search")
        result = await code.run('groups.search(query="anyio")')
    signature = next(block for block in found.split("\n\n") if block.startswith("groups.search("))
    assert "peer: " in signature.splitlines()[0]  # the group's own parameter: which member serves
    assert result.error is None, result.error
    # The members declare the same output schema: the group's result is the value itself.
    assert result.value == "AnyIO: structured concurrency on top of asyncio or Trio."


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"workers": 0}, "workers must be a positive whole number"),
        ({"max_found": True}, "max_found must be a positive whole number"),
        ({"call_timeout": -1}, "a timeout must be a positive number of seconds"),
        ({"run_name": "run python"}, "a function name must match"),
        ({"find_name": "run_python"}, "must differ"),
        ({"limits": "fast"}, "limits must be a SandboxLimits"),
        ({"direct_calls": 1}, "direct_calls must be True or False"),
    ],
)
async def test_unusable_options_are_usage_errors(options: dict[str, Any], said: str) -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UsageError, match=said):
            CodeMode(adapter, **options)


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"wall_time": 0}, "wall_time must be a positive number"),
        ({"max_memory": 1.5}, "max_memory must be a positive whole number"),
        ({"max_calls": 0}, "max_calls must be a positive whole number"),
        ({"max_output_chars": 10}, "max_output_chars must be None or a whole number of at least 64"),
    ],
)
def test_unusable_limits_are_usage_errors(limits: dict[str, Any], said: str) -> None:
    with pytest.raises(UsageError, match=said):
        SandboxLimits(**limits)


def _hinted_peer() -> RecordingPeer:
    """Tools that declare themselves destructive, not destructive, read-only (and destructive,
    which MCP ignores when read-only), and one with no annotations at all."""
    peer = RecordingPeer("store")
    empty = {"type": "object", "properties": {"key": {"type": "string"}}}
    hints = {
        "wipe": mt.ToolAnnotations(destructive_hint=True),
        "append": mt.ToolAnnotations(destructive_hint=False),
        "peek": mt.ToolAnnotations(read_only_hint=True, destructive_hint=True),
        "plain": None,
    }
    for name, hint in hints.items():
        peer.tools.append(
            mt.Tool(name=name, description=f"The {name} tool.", input_schema=empty, annotations=hint)
        )
        peer.handlers[name] = lambda arguments, name=name: _text(f"{name} ran")
    return peer


PROBE = """
out = []
for f in [store.peek, store.append, store.plain, store.wipe]:
    try:
        out.append(f(key="k"))
    except PermissionError as e:
        out.append("refused: " + str(e))
out
"""


async def test_declared_destructive_tools_are_listed_but_refused_unless_the_host_enables_them() -> None:
    store = _hinted_peer()
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        await adapter.add_peer("store", await stack.enter_async_context(mcp.Client(store.server())))
        code = await stack.enter_async_context(CodeMode(adapter))
        result = await code.run(PROBE)
        found = await code.find_tools("wipe the store")
        plain_doc = code.signature("store", "plain")
    assert result.error is None, result.error
    assert result.value[:3] == ["peek ran", "append ran", "plain ran"]
    refusal = result.value[3]
    assert refusal.startswith("refused: store.wipe was not called: the tool declares itself destructive")
    # It says how the host enables it, and the model what to do meanwhile.
    assert "CodeMode(approve=...)" in refusal and "allow_destructive=True" in refusal
    assert "tell the user" in refusal
    # The refused call never reached the peer, and the answer lists it as refused.
    assert [name for name, _ in store.calls] == ["peek", "append", "plain"]
    assert [c.error_type for c in result.calls] == [None, None, None, "not_enabled"]
    # find_tools shows it, marked as not callable; a tool without annotations is not marked.
    assert "store.wipe(" in found and "Not callable from programs here" in found
    assert "Not callable" not in plain_doc


async def test_approve_or_allow_destructive_enables_the_declared_destructive_tools() -> None:
    store = _hinted_peer()
    asked: list[str] = []

    def approve(function: Any, arguments: dict[str, Any]) -> bool:
        asked.append(function.qualified)
        return True

    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        await adapter.add_peer("store", await stack.enter_async_context(mcp.Client(store.server())))
        asking = await stack.enter_async_context(CodeMode(adapter, approve=approve))
        asked_result = await asking.run(PROBE)
        trusting = await stack.enter_async_context(CodeMode(adapter, allow_destructive=True))
        trusted_result = await trusting.run(PROBE)
        doc = trusting.signature("store", "wipe")
    everything = ["peek ran", "append ran", "plain ran", "wipe ran"]
    assert asked_result.value == everything and trusted_result.value == everything
    # With approve=, every call of a tool MCP counts as destructive is asked about (no annotations
    # included); the read-only and the non-destructive ones are not.
    assert asked == ["store.plain", "store.wipe"]
    assert [name for name, _ in store.calls] == ["peek", "append", "plain", "wipe"] * 2
    assert "Not callable" not in doc


async def test_allow_destructive_must_be_a_bool_and_approve_callable() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UsageError, match="allow_destructive must be True or False"):
            CodeMode(adapter, allow_destructive="yes")  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="approve must be a function"):
            CodeMode(adapter, approve=True)  # type: ignore[arg-type]


async def test_a_group_with_a_declared_destructive_member_is_off_by_default() -> None:
    first, second = _hinted_peer(), _hinted_peer()
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(
            OpenAIPeerToolAdapter(aliases={"wipe": ["a/wipe", "b/wipe"], "plain": ["a/plain", "b/plain"]})
        )
        await adapter.add_peer("a", await stack.enter_async_context(mcp.Client(first.server())))
        await adapter.add_peer("b", await stack.enter_async_context(mcp.Client(second.server())))
        code = await stack.enter_async_context(CodeMode(adapter))
        result = await code.run(
            'out = [groups.plain(key="k")]\n'
            "try:\n    groups.wipe(key='k')\nexcept PermissionError as e:\n    out.append(str(e))\nout"
        )
    assert result.error is None, result.error
    assert result.value[0].startswith("plain ran")  # (served by a): the group says which member
    assert result.value[1].startswith("groups.wipe was not called: the tool declares itself destructive")
    assert [name for name, _ in first.calls + second.calls] == ["plain"]
