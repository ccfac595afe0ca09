"""A hand-made corpus and a scripted embedder for the graph tests."""
from __future__ import annotations

import torch

from atomicrag.core.schemas import Atom, AtomizeResult, Chunk, Triple


class TableEmbedder:
    """Embedder stand-in: fixed vectors for known texts, a hashed one-hot for the rest."""

    def __init__(self, table: dict[str, list[float]], dim: int = 4, name: str = "table") -> None:
        self.table = table
        self.dim = dim
        self.name = name
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        self.calls.append(list(texts))
        rows = []
        for t in texts:
            if t in self.table:
                rows.append(torch.tensor(self.table[t], dtype=torch.float32))
            else:
                v = torch.zeros(self.dim)
                v[sum(map(ord, t)) % self.dim] = 1.0
                rows.append(v)
        return torch.stack(rows)


def atom(i: int, chunk: str, text: str, ents: list[str]) -> Atom:
    return Atom(id=f"{chunk}#a{i}", text=text, chunk_id=chunk, passage_id=chunk.replace("c", "p"), entities=ents)


def corpus() -> AtomizeResult:
    """Entities (first-seen order over triples): paris, france, eiffel tower, euro, us."""
    atoms = [
        atom(0, "c0", "Paris is the capital of France.", ["Paris", "France"]),
        atom(1, "c0", "The Eiffel Tower is in Paris.", ["Eiffel Tower", "paris"]),
        atom(2, "c1", "France uses the euro.", ["France", "euro"]),
        atom(3, "c1", "The US does not.", ["US"]),
    ]
    triples = [
        Triple("Paris", "capital of", "France", "c0"),
        Triple("Paris", "Capital of", "France", "c1"),  # same label after canonicalisation
        Triple("paris", "largest city of", "France", "c1"),
        Triple("Eiffel Tower", "located in", "Paris", "c0"),
        Triple("France", "uses", "euro", "c1"),
        Triple("France", "is", "France", "c1"),  # self pair: skipped
        Triple("US", "differs from", "France", "c1"),
    ]
    return AtomizeResult(atoms=atoms, triples=triples)


# Paris ~ Eiffel Tower (cos 0.9), France ~ US (cos 1.0, but "US" is too short), euro alone.
VECTORS = {
    "Paris": [1.0, 0.0, 0.0, 0.0],
    "Eiffel Tower": [0.9, 0.4358899, 0.0, 0.0],
    "France": [0.0, 0.0, 1.0, 0.0],
    "US": [0.0, 0.0, 1.0, 0.0],
    "euro": [0.0, 0.0, 0.0, 1.0],
}


class CountingAtomizer:
    """An atomizer that returns the hand-made corpus and counts its calls (stage-cache tests)."""

    name = "sentence"
    uses_llm = False

    def __init__(self) -> None:
        self.calls = 0

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        self.calls += 1
        return corpus()


CHUNKS = [Chunk(id="c0", passage_id="p0", text="x"), Chunk(id="c1", passage_id="p1", text="y")]
