from __future__ import annotations

import os
import re
import subprocess
import sys

from mcpx_router import is_legal_name

from ..support._openai_replay import chat_completion, replay_openai, tool_call


def test_demo_shows_prefixed_tools_from_several_peers_being_called() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, "-m", "mcpx_router", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    out = done.stdout
    # The merged catalogue holds both `search` tools, each under its own peer prefix.
    assert re.search(r"^\s+search-agent__search\s+peer=search-agent", out, re.M)
    assert re.search(r"^\s+docs__search\s+peer=docs", out, re.M)
    # Calls were answered by the peer their name points to.
    assert "search-agent__search" in out and "-> served by peer 'search-agent'" in out
    assert "docs__search" in out and "-> served by peer 'docs'" in out
    assert "Lisbon: sunny, 21°C, for the next 2 day(s)" in out
    # Mistaken calls become error answers, not crashes.
    assert "Error: there is no tool named 'weather__forcast'" in out
    assert "are not valid JSON" in out


def test_demo_with_a_key_holds_a_conversation_through_the_openai_sdk() -> None:
    script = [
        chat_completion(
            {
                "content": None,
                "tool_calls": [
                    tool_call("call_a", "weather__forecast", '{"city": "Oslo", "days": 1}'),
                    tool_call("call_b", "docs__search", '{"query": "install"}'),
                ],
            }
        ),
        chat_completion({"content": "Snow in Oslo; run python3 dev.py demo to install."}),
    ]
    with replay_openai(script) as replay:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env |= {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": replay.base_url,
            "OPENAI_MODEL": "replay-model",
        }
        done = subprocess.run(
            [sys.executable, "-m", "mcpx_router", "demo", "--prompt", "Weather in Oslo?"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=True,
        )
    first, second = replay.bodies("/v1/chat/completions")
    assert first["model"] == "replay-model"
    names = [tool["function"]["name"] for tool in first["tools"]]
    assert {"weather__forecast", "search-agent__search", "docs__search"} <= set(names)
    assert all(is_legal_name(name) for name in names)
    answers = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert answers == {
        "call_a": "Oslo: snow, 3°C, for the next 1 day(s)",
        "call_b": "docs/install.md: run `python3 dev.py demo` on a fresh checkout.",
    }
    assert "assistant: Snow in Oslo" in done.stdout
