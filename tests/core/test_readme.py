"""The README's quickstart runs as written, against a local OpenAI-compatible endpoint."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ..support._openai_replay import chat_completion, replay_openai, tool_call

README = Path(__file__).resolve().parent.parent.parent / "README.md"


def test_the_quickstart_runs_and_sends_prefixed_tools() -> None:
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert code is not None, "the README has no python block"
    script = code.group(1)
    reply = chat_completion(
        {"content": None, "tool_calls": [tool_call("c1", "weather__forecast", '{"city": "Oslo"}')]}
    )
    with replay_openai([reply]) as replay:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env |= {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": replay.base_url}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env, check=True
        )
    (request,) = replay.bodies("/v1/chat/completions")
    names = {tool["function"]["name"] for tool in request["tools"]}
    assert {"weather__forecast", "weather__alerts", "docs__search"} <= names
    assert "'tool_call_id': 'c1'" in done.stdout and "Oslo: snow, 3°C" in done.stdout
