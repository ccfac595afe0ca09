"""This project's own prompts (fidelity.prompts=own) share no passage with the released prompts.

The released templates carry HippoRAG's one-shot example (a passage and its triples) and the
judge carries its few-shot block; our own prompts must use examples written here. The check is
run against the real checkout's text at test time (nothing of it is stored in this repository):
no run of 8 consecutive words of any released prompt may appear in ``atomicrag/prompts/``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from atomicrag.prompts import released
from tests.prompts.released_checkout import REPO, require_checkout

RUN = 8  # words; shorter runs match generic instructions ("reply with one json object ...")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _runs(text: str) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i:i + RUN]) for i in range(len(w) - RUN + 1)}


def released_texts(root: Path) -> list[str]:
    released.load.cache_clear()
    p = released.load(str(root))
    texts = [m["content"] for msgs in p.chats.values() for m in msgs]
    texts += [v if isinstance(v, str) else json.dumps(v) for v in p.judge.values()]
    texts += list(p.instructions.values())
    try:
        from atomicrag.prompts import released_sieve
        texts += released_sieve.load(str(root)).texts()
    except ImportError:  # the sieve reader is optional for this check
        pass
    return texts


def test_own_prompts_share_no_passage_with_the_released_prompts() -> None:
    root = require_checkout()
    runs: set[tuple[str, ...]] = set()
    for t in released_texts(root):
        runs |= _runs(t)
    assert len(runs) > 1000  # the checkout was really read (its examples are long)
    found = {}
    for f in sorted((REPO / "atomicrag" / "prompts").glob("*.py")):
        common = _runs(f.read_text(encoding="utf-8")) & runs
        if common:
            found[f.name] = sorted(" ".join(r) for r in common)[:3]
    assert not found, f"released prompt text inside our own prompts: {found}"


def test_the_check_catches_a_copied_example(tmp_path: Path) -> None:
    """The released NER one-shot passage, pasted into a prompt file, is caught."""
    root = require_checkout()
    released.load.cache_clear()
    one_shot = released.load(str(root)).chats["ner"][1]["content"]
    runs: set[tuple[str, ...]] = set()
    for t in released_texts(root):
        runs |= _runs(t)
    pasted = f'EXAMPLE = """{one_shot[:400]}"""\n'
    assert _runs(pasted) & runs
