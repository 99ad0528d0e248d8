"""The inspector: what an open page costs the Router's calls, its endpoints at 5,000 tools, and the
page itself in headless Chromium (`inspector`, `_inspector_page`)."""
