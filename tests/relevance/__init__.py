"""Tests of mcpx_router.relevance: embeddings, ranking, the search tool, close names."""
