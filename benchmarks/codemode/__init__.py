"""Code mode against function calling: the prompt tokens of one multi-step task (`codemode`)."""
