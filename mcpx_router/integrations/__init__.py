"""Agent frameworks on top of the router: its tools offered in each framework's own tool type.

Each integration is a module of its own, imported by name and installed with its extra
(`pip install 'mcpx-router[langchain]'`, `[dspy]`): `import mcpx_router` loads none of them.
See docs/frameworks.md.
"""
