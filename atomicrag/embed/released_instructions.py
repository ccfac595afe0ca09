"""How the released AtomicRAG code applies its embedding instructions (switch #10).

The instruction texts live in the released code (its ``prompts/linking.py``) and are read from the
checkout the user names (``fidelity.released_code``; ``prompts.released.instruction``), never
copied here. The released code prepends them to the text with no separator
(``f"{instruction}{text}"``): questions get the query-to-passage instruction when matched against
atoms, query entities the query-to-node one when matched against graph entities; atoms and
entities are embedded with no instruction. ``embedder.embed_instruction="released"`` uses them in
place of ``embedder.query_prefix``.
"""
from __future__ import annotations

QUERY_TO_PASSAGE = "query_to_passage"  # the released linking method names
QUERY_TO_NODE = "query_to_node"


def glue(instruction: str, texts: list[str]) -> list[str]:
    """``instruction + text`` for each text, no separator (as the released code does)."""
    return [f"{instruction}{t}" for t in texts]
