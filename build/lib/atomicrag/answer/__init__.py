"""Readers: turn a question and its merged context into an answer (precise | abstract)."""
