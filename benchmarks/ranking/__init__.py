"""Recall@k of the tool ranking on a labelled set of requests: lexical against embeddings
(`relevance`), and with or without stemming (`stemming`)."""
