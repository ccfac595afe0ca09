"""The instruction strings of the released AtomicRAG code (its ``prompts/linking.py``), switch #10.

The released code prepends them to the text with no separator (``f"{instruction}{text}"``):
questions get ``QUERY_TO_PASSAGE`` when matched against atoms, query entities ``QUERY_TO_NODE``
when matched against graph entities; atoms and entities are embedded with no instruction.
``fidelity.embed_instruction="released"`` uses them in place of ``embedder.query_prefix``.
"""
from __future__ import annotations

QUERY_TO_PASSAGE = "Given a question, retrieve relevant documents that best answer the question."
QUERY_TO_NODE = "Given a question, retrieve relevant phrases that are mentioned in this question."


def glue(instruction: str, texts: list[str]) -> list[str]:
    """``instruction + text`` for each text, no separator (as the released code does)."""
    return [f"{instruction}{t}" for t in texts]
