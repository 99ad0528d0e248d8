"""Code mode with `text_calls=True`: calls of run_python/find_tools written as text, and a fenced
python block, are answered like native calls; through the real `openai` SDK against the scripted
endpoint, a real in-process MCP peer behind the adapter, Chat and Responses. Both anyio backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai import AsyncOpenAI

from mcpx_router.codemode._written import python_block
from mcpx_router.loop import LoopResult, run_chat, run_responses

from ..support._openai_replay import CHAT, RESPONSES, chat_completion, output_message, replay_openai, response
from .test_codemode import PROGRAM, code_mode

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

CREATE = 'tracker.create_issue(title="second block")'
"""A program whose run leaves a trace at the tracker peer."""
FENCED_JSON = "```json\n" + json.dumps({"name": "run_python", "arguments": {"code": PROGRAM}}) + "\n```"
BARE_BLOCK = f"Let me look.\n```python\n{PROGRAM}\n```"
TWO_BLOCKS = f"First:\n```python\n{PROGRAM}\n```\nThen:\n```py\n{CREATE}\n```"
OTHER_FENCES = f"```bash\ngit log -1\n```\n```\n{CREATE}\n```\n```javascript\n{CREATE}\n```"


async def _run(api: str, reply: str, *, text_calls: bool = True) -> tuple[LoopResult, list[Any], list[Any]]:
    """One conversation: the model writes `reply`, then answers "done" if it is answered."""
    if api == "chat":
        script = [chat_completion({"content": reply}), chat_completion({"content": "done"})]
    else:
        script = [response([output_message(reply)]), response([output_message("done")])]
    async with code_mode() as (code, adapter, tracker):
        with replay_openai(script) as replay:
            client = AsyncOpenAI(base_url=replay.base_url, api_key="test", max_retries=0)
            if api == "chat":
                messages: Any = [{"role": "user", "content": "newest commit?"}]
                result = await run_chat(
                    client, adapter, model="m", messages=messages, code_mode=code, text_calls=text_calls
                )
            else:
                result = await run_responses(
                    client, adapter, model="m", input="newest commit?", code_mode=code, text_calls=text_calls
                )
            await client.close()
    return result, replay.bodies(CHAT if api == "chat" else RESPONSES), tracker.calls


def _sent_back(api: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The calls the second request carries (name, arguments) and the answers to them."""
    if api == "chat":
        calls = [c["function"] for m in body["messages"] for c in m.get("tool_calls") or []]
        answers = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        ids = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
        assert ids == [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    else:
        calls = [i for i in body["input"] if i.get("type") == "function_call"]
        answers = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
        ids = [i["call_id"] for i in calls]
        assert ids == [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    return [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in calls], answers


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("reply", [FENCED_JSON, BARE_BLOCK], ids=["fenced-json-call", "python-block"])
async def test_a_written_call_or_a_python_block_runs_as_run_python(api: str, reply: str) -> None:
    result, bodies, _ = await _run(api, reply)
    assert result.text == "done" and result.stopped == "answer"
    assert result.turns == 2 and result.tool_calls == 1
    calls, answers = _sent_back(api, bodies[1])
    assert calls == [{"name": "run_python", "arguments": {"code": PROGRAM}}]
    assert len(answers) == 1 and answers[0].endswith('Result: "a1b2c3"')


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_only_the_first_of_two_python_blocks_runs(api: str) -> None:
    result, bodies, tracker_calls = await _run(api, TWO_BLOCKS)
    assert result.text == "done" and result.tool_calls == 1
    calls, answers = _sent_back(api, bodies[1])
    assert calls == [{"name": "run_python", "arguments": {"code": PROGRAM}}]
    assert answers[0].endswith('Result: "a1b2c3"')
    assert tracker_calls == []  # the second block never ran
    # the text around the block, the second block with it, stays in the conversation
    said = json.dumps(bodies[1]["messages" if api == "chat" else "input"])
    assert "Then:" in said and "second block" in said


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_second_blocks_program_on_its_own_reaches_the_tracker(api: str) -> None:
    """What shows that the tests above and below would see the program run."""
    result, bodies, tracker_calls = await _run(api, f"```py\n{CREATE}\n```")
    assert result.tool_calls == 1 and tracker_calls == [("create-issue", {"title": "second block"})]
    assert _sent_back(api, bodies[1])[1][0].endswith('Result: "issue #12 created: second block"')


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    "reply",
    ["The newest commit is a1b2c3.", OTHER_FENCES, f"{PROGRAM}", f"```python\n{PROGRAM}"],
    ids=["prose", "other-fences", "unfenced-code", "unclosed-fence"],
)
async def test_a_reply_without_a_call_or_a_python_block_ends_the_conversation(api: str, reply: str) -> None:
    result, bodies, tracker_calls = await _run(api, reply)
    assert result.text == reply and result.stopped == "answer"
    assert result.turns == 1 and result.tool_calls == 0 and len(bodies) == 1
    assert tracker_calls == []


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_without_text_calls_a_python_block_is_only_text(api: str) -> None:
    result, bodies, _ = await _run(api, BARE_BLOCK, text_calls=False)
    assert result.text == BARE_BLOCK and result.turns == 1 and result.tool_calls == 0 and len(bodies) == 1


@given(st.text(), st.sampled_from(["python", "py", "Python", "python3"]), st.text())
def test_a_fenced_python_block_is_found_whole_and_the_rest_kept(before: str, tag: str, code: str) -> None:
    before, code = before.replace("`", "'"), code.replace("`", "'")
    text = f"{before}\n```{tag}\n{code}\n```\nafter"
    found = python_block(text)
    if not code.strip():
        assert found is None
        return
    assert found is not None
    got, rest = found
    assert got.strip() == code.strip() and code.strip() in got
    assert rest is not None and rest.endswith("after") and before.strip() in rest


@given(st.text().map(lambda t: t.replace("```", "")))
def test_text_without_a_fence_holds_no_block(text: str) -> None:
    assert python_block(text) is None
