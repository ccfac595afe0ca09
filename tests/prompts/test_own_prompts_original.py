"""This project's own prompts (fidelity.prompts=own) share no passage with the released prompts,
and no committed file carries released prompt text (recordings store hashes of released messages).

The released templates carry HippoRAG's one-shot example (a passage and its triples) and the
judge carries its few-shot block; our own prompts must use examples written here. The check is
run against the real checkout's text at test time (nothing of it is stored in this repository):
no run of 8 consecutive words of any released prompt may appear in ``atomicrag/prompts/``, and no
run of 12 in any file git tracks (code, tests, fixtures, results, docs).
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
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
    # every template file of the checkout, also those the pipeline does not send (query NER, the
    # separate triple and fragment prompts): the parity run meets them
    # (every long string literal of each file: some build their template by a call)
    for f in sorted((root / released.TEMPLATES_DIR).glob("*.py")):
        texts += [n.value for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) >= 60]
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


COMMITTED_RUN = 12  # words: longer than any phrase two independent prompts share by chance


def _long_runs(text: str) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i:i + COMMITTED_RUN]) for i in range(len(w) - COMMITTED_RUN + 1)}


def test_no_committed_file_carries_released_prompt_text() -> None:
    """Released prompts are read from a checkout at run time, never stored: not in code, scripts'
    stage rules, test fixtures, parity recordings (message contents stored as sha256) or reports."""
    root = require_checkout()
    runs: set[tuple[str, ...]] = set()
    for t in released_texts(root):
        runs |= _long_runs(t)
    assert len(runs) > 1000
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    found = {}
    for name in tracked.decode().split("\0"):
        f = REPO / name
        if not name or not f.is_file() or f.stat().st_size > 20_000_000:
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary
            continue
        # JSON strings escape newlines and quotes; decode the common escapes so a recorded body is read as text
        common = _long_runs(text.replace("\\n", " ").replace('\\"', '"')) & runs
        if common:
            found[name] = sorted(" ".join(r) for r in common)[:2]
    assert not found, f"released prompt text committed in {len(found)} file(s): {found}"
