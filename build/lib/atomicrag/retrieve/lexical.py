"""Lexical (BM25) scores of queries against atoms, passages and entity names.

Small dense encoders (all-MiniLM-L6-v2) blur exact names: "Lothair II" and "Lothair I" sit at
cosine ~0.95, and a rare surname in the question may not move the query vector at all. BM25
rewards exactly the rare tokens a name consists of, so a hybrid of the two links the entity the
question names (retrieve/seeds.py, ``retriever.lexical_weight``).

The index is built with ``bm25s`` (Lucene BM25, k1=1.5, b=0.75) and its token x document score
matrix is kept as one torch sparse CSR ``[V, D]``, so a whole batch of queries is scored with one
sparse-dense product: ``scores[Q, D] = bag[Q, V] @ M[V, D]``.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import torch

_TOKEN = re.compile(r"[0-9a-z]+")
# English function words that carry no lexical evidence (question words included: "who", "when").
_STOP_TEXT = (
    "a an and are as at be been being but by did do does for from had has have he her his how i if in into "
    "is it its of on or she so that the their them they this those to was were what when where which who "
    "whom whose why will with"
)
STOPWORDS = frozenset(_STOP_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stop-words ("Lothair Ii's" -> ["lothair", "ii", "s"])."""
    return [t for t in _TOKEN.findall(text.casefold()) if t not in STOPWORDS]


class BM25Matrix:
    """BM25 over a fixed list of texts; ``scores(queries)`` is ``[Q, D]`` float32."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        try:
            import bm25s
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("retriever.lexical_weight > 0 needs bm25s: pip install 'bm25s>=0.2'") from exc
        import logging

        bm25_log = logging.getLogger("bm25s")
        if bm25_log.level <= logging.DEBUG:  # bm25s sets its own logger to DEBUG: one line per index build
            bm25_log.setLevel(logging.WARNING)
        self.num_docs = len(texts)
        docs = [tokenize(t) for t in texts]
        # an all-stop-word text indexes as one placeholder token so the document count stays right
        docs = [d if d else ["\x00"] for d in docs]
        model = bm25s.BM25(k1=k1, b=b)
        model.index(docs, show_progress=False)
        self.vocab: dict[str, int] = dict(model.vocab_dict)
        s = model.scores  # CSC over tokens: indptr [V+1], indices = document ids, data = BM25 weights
        indptr = torch.as_tensor(s["indptr"], dtype=torch.int64)
        self.matrix = torch.sparse_csr_tensor(
            indptr, torch.as_tensor(s["indices"], dtype=torch.int64),
            torch.as_tensor(s["data"], dtype=torch.float32), size=(indptr.numel() - 1, self.num_docs),
        )  # [V, D]

    def bag(self, queries: Sequence[str]) -> torch.Tensor:
        """Sparse ``[Q, V]`` token counts of the queries (unknown tokens dropped)."""
        rows, cols = [], []
        for qi, q in enumerate(queries):
            for t in tokenize(q):
                j = self.vocab.get(t)
                if j is not None:
                    rows.append(qi)
                    cols.append(j)
        idx = torch.tensor([rows, cols], dtype=torch.int64).reshape(2, -1)
        return torch.sparse_coo_tensor(idx, torch.ones(idx.shape[1]), (len(queries), self.matrix.shape[0])).coalesce()

    def scores(self, queries: Sequence[str]) -> torch.Tensor:
        """BM25 score of every document for every query: ``[Q, D]`` float32 (0 without overlap)."""
        if not queries or self.num_docs == 0:
            return torch.zeros(len(queries), self.num_docs)
        bag = self.bag(queries)  # [Q, V]
        # (M^T @ bag^T)^T: CSR [V, D] transposed times a dense [V, Q] -> [D, Q]
        return (self.matrix.t() @ bag.to_dense().t()).t().contiguous()  # [Q, D]


def max_normalise(scores: torch.Tensor) -> torch.Tensor:
    """Each row divided by its maximum, so the best-matching document scores 1 (rows of 0 stay 0)."""
    return scores / scores.max(dim=1, keepdim=True).values.clamp_min(1e-12)  # [Q, D]


class LexicalScorer:
    """BM25 of queries against a graph's atoms and entity names, max-normalised per query row."""

    def __init__(self, atom_texts: Sequence[str], entity_texts: Sequence[str]) -> None:
        self.atoms = BM25Matrix(atom_texts)
        self.entities = BM25Matrix(entity_texts)

    def atom_scores(self, queries: Sequence[str]) -> torch.Tensor:
        """``[Q, A]`` in [0, 1]: each query's BM25 over the atom texts, divided by its best."""
        return max_normalise(self.atoms.scores(queries))

    def entity_scores(self, names: Sequence[str]) -> torch.Tensor:
        """``[F, E]`` in [0, 1]: each query entity's BM25 over the entity names, divided by its best."""
        return max_normalise(self.entities.scores(names))
