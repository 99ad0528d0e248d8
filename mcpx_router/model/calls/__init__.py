"""The tool calls a model sends and the answers it expects: every call shape of the `openai` SDK,
calls written as text, the output items passed over, and the guard on one turn's calls."""
