"""String and retrieval metrics: SQuAD-normalised EM and token F1, passage recall@k.

These are what HippoRAG reports for the multi-hop datasets (docs/fidelity.md, Metrics): the answer is
normalised (lowercase, punctuation and the articles a/an/the removed, whitespace folded) and
scored against every gold answer, keeping the best.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation (same order of steps as the official script)."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(gold: str | Iterable[str]) -> list[str]:
    return [gold] if isinstance(gold, str) else [g for g in gold if g is not None]


def exact_match(prediction: str, gold: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(gold)))


def _f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        # SQuAD convention: two empty answers agree, one empty answer gets nothing.
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold: str | Iterable[str]) -> float:
    """Token-level F1 after normalisation, the max over gold answers (0.0 with no gold)."""
    return max((_f1(prediction, g) for g in _golds(gold)), default=0.0)


def recall_at_k(retrieved: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """|gold ∩ top-k distinct retrieved passages| / |gold|.

    ``retrieved`` is in rank order and may repeat a passage (several atoms of one passage):
    repeats are removed keeping the first occurrence before cutting at k, so k counts
    passages, not atoms. Returns None when there is no gold passage (not computable, to be
    left out of averages rather than counted as 0 or 1).
    """
    if k <= 0:
        raise ValueError("k must be > 0")
    gold = {g for g in gold_ids if g}
    if not gold:
        return None
    top = list(dict.fromkeys(retrieved))[:k]
    return len(gold.intersection(top)) / len(gold)


def qa_scores(prediction: str, answers: Iterable[str], retrieved: Sequence[str] | None = None,
              gold_ids: Iterable[str] = (), ks: Sequence[int] = (2, 5)) -> dict[str, float | None]:
    """EM, F1 and recall@k for one question, keyed as aggregate.py expects."""
    answers = list(answers)
    out: dict[str, float | None] = {
        "em": exact_match(prediction, answers) if answers else None,
        "f1": token_f1(prediction, answers) if answers else None,
    }
    gold = list(gold_ids)
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(retrieved or [], gold, k) if retrieved is not None else None
    return out
