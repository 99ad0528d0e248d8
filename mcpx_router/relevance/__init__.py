"""Relevance: which tools suit a conversation, and which names come close to an unknown one.

Embeddings of tools and queries (`_embedding`; on this machine, `_local`), the ranking that fuses
them with the lexical (BM25) score of `model/_budget` (`_fusion`, `_ranking`), the search tool a
conversation uses to find more tools (`_tool_search`), and close published names for a name no
tool answers to (`_suggest`, `_unknown`). It imports the core and `model/`; of the core, the
catalogue (unknown names), the adapter (ranking) and the loops (tool search) plug it in.
"""
