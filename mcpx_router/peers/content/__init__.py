"""What peers offer besides tools: resources, resource templates and prompts under peer-prefixed
names, kept current as peers change them, and offered to the model as tools if asked."""
