"""A labelled set for ranking tools: requests as a user would put them, each with the one real
tool that serves it, and a catalogue of captured real tools among as many generated ones as needed.

The real tools are those captured from real MCP servers (tests/support/fixtures/tool_schemas:
mcp-server-time, -fetch, -git, server-everything, -filesystem, -memory), published under the
peer ids of `PEER_OF`. The requests' words are chosen to differ from the tools' own where people
would say it differently, so recall measures more than word overlap. Generated tools have the
form `verb_noun_i` ("Archive the invoice records of the billing system.").
"""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as mt

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "support" / "fixtures" / "tool_schemas"
PEER_OF = {
    "mcp-server-time": "time",
    "mcp-server-fetch": "fetch",
    "mcp-server-git": "git",
    "@modelcontextprotocol/server-everything": "everything",
    "@modelcontextprotocol/server-filesystem": "fs",
    "@modelcontextprotocol/server-memory": "memory",
}


def real_tools() -> dict[str, list[mt.Tool]]:
    """Each captured server's tools, exactly as listed, by peer id."""
    out: dict[str, list[mt.Tool]] = {}
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        tools = [
            mt.Tool.model_validate({k: v for k, v in tool.items() if k != "outputSchema"})
            for tool in data["tools"]
        ]
        out[PEER_OF[data["server"]]] = tools
    return out


VERBS = (
    "archive audit approve assign cancel clone close compare compress create decrypt delete deploy "
    "disable enable encrypt escalate estimate export flag freeze import index invite label lock merge "
    "migrate notify pause publish rank refund register rename renew reopen restore review schedule "
    "share snapshot sync tag transfer unlock update validate verify"
).split()
NOUNS = (
    "invoice ticket customer order shipment coupon subscription contract payroll budget campaign "
    "lead opportunity vendor warehouse pallet route driver vehicle patient appointment prescription "
    "course student grade classroom recipe ingredient menu reservation table room guest badge "
    "visitor device sensor firmware alarm camera playlist podcast episode article comment survey "
    "poll ballot donation pledge grant"
).split()
SYSTEMS = (
    "billing helpdesk crm logistics clinic school kitchen hotel security media forum fundraising".split()
)
SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "The record's id."}, "note": {"type": "string"}},
    "required": ["id"],
}


def filler_tools(count: int, *, per_peer: int = 100) -> dict[str, list[mt.Tool]]:
    """`count` generated tools over peers `svc0`, `svc1`, ... of `per_peer` tools each."""
    out: dict[str, list[mt.Tool]] = {}
    for i in range(count):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        system = SYSTEMS[i % len(SYSTEMS)]
        description = f"{verb.capitalize()} the {noun} records of the {system} system."
        tool = mt.Tool(name=f"{verb}_{noun}_{i}", description=description, input_schema=SCHEMA)
        out.setdefault(f"svc{i // per_peer}", []).append(tool)
    return out


LABELLED: list[tuple[str, str]] = [
    ("What time is it right now in Tokyo?", "time__get_current_time"),
    ("If it is 9am in Paris, what hour is that in New York?", "time__convert_time"),
    ("Translate a meeting hour from London to Sydney", "time__convert_time"),
    ("Download the contents of this web page for me", "fetch__fetch"),
    ("Grab the article at https://example.com and summarise it", "fetch__fetch"),
    ("Show me which files I modified in my working tree", "git__git_status"),
    ("What changes have I not staged yet?", "git__git_diff_unstaged"),
    ("Show the changes that are staged for the next commit", "git__git_diff_staged"),
    ("Compare my branch with main", "git__git_diff"),
    ("Record my staged changes with the message 'fix typo'", "git__git_commit"),
    ("Stage the file README.md", "git__git_add"),
    ("Unstage everything I added", "git__git_reset"),
    ("Show the history of recent commits", "git__git_log"),
    ("Start a new branch called feature-x", "git__git_create_branch"),
    ("Switch over to the release branch", "git__git_checkout"),
    ("Display the contents of commit abc123", "git__git_show"),
    ("Which branches exist in this repository?", "git__git_branch"),
    ("Repeat back what I say", "everything__echo"),
    ("Add two numbers together: 3 and 4", "everything__get-sum"),
    ("Print the environment variables of the server", "everything__get-env"),
    ("Give me a small sample picture", "everything__get-tiny-image"),
    ("Run a slow task that reports progress", "everything__trigger-long-running-operation"),
    ("Compress a file with gzip and return it", "everything__gzip-file-as-resource"),
    ("Turn on the simulated log messages", "everything__toggle-simulated-logging"),
    ("Open the notes.txt document and show me its text", "fs__read_text_file"),
    ("Read several files at once: a.txt and b.txt", "fs__read_multiple_files"),
    ("Show me the photo stored at /pics/cat.png", "fs__read_media_file"),
    ("Save this text into a new file called todo.md", "fs__write_file"),
    ("Replace the word foo with bar in config.yaml", "fs__edit_file"),
    ("Make a new folder named build", "fs__create_directory"),
    ("What is inside the src folder?", "fs__list_directory"),
    ("List the folder contents with their sizes", "fs__list_directory_with_sizes"),
    ("Show the whole nested folder structure as a tree", "fs__directory_tree"),
    ("Rename old.txt to new.txt", "fs__move_file"),
    ("Look for every file whose name matches *.py", "fs__search_files"),
    ("When was report.pdf last modified and how big is it?", "fs__get_file_info"),
    ("Which directories am I allowed to access?", "fs__list_allowed_directories"),
    ("Remember that Alice is a person who works at Acme", "memory__create_entities"),
    ("Note that Alice manages Bob", "memory__create_relations"),
    ("Add the fact that Bob likes tea to what you know about him", "memory__add_observations"),
    ("Forget everything about the entity Carol", "memory__delete_entities"),
    ("Remove the link between Alice and Bob", "memory__delete_relations"),
    ("Show the entire knowledge graph", "memory__read_graph"),
    ("Find people in memory related to Acme", "memory__search_nodes"),
    ("Open the stored records for Alice and Bob", "memory__open_nodes"),
]
