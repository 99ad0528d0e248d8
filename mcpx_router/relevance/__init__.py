"""Relevance: which tools suit a conversation.

Embeddings of tools and queries (`_embedding`; on this machine, `_local`), the ranking that fuses
them with the lexical (BM25) score of `model/_budget` (`_fusion`, `_ranking`), and the search
tool a conversation uses to find more tools (`_tool_search`). It sits above the catalogue, the
answering and the dispatch (it ranks their tools) and below the adapter and the loops, which plug
it in; the tool search asks the adapter it serves through a protocol (`SearchedAdapter`).
"""
