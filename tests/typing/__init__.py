"""Type-checking tests: user code written against the openai SDK's types, and misuses."""
