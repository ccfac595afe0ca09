"""The one engine: per-corpus indexes, library = harness, registries, sampling, fused top-k, baselines."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.harness.config import load_harness_config
from atomicrag.harness.pipeline import run_one, run_with_baselines
from atomicrag.harness.tracking import run_dir

# two corpora that share entity names: a question must be answered from its own corpus only
CORPUS = [
    {"id": "a1", "title": "Anna", "text": "Anna Berg was born in Oslo. Anna Berg studied chemistry in Bergen.",
     "corpus": "book-a"},
    {"id": "a2", "title": "Oslo", "text": "Oslo is the capital of Norway. The Akers River flows through Oslo.",
     "corpus": "book-a"},
    {"id": "a3", "title": "Bergen", "text": "Bergen lies on the west coast of Norway. Bergen has a fish market.",
     "corpus": "book-a"},
    {"id": "b1", "title": "Anna", "text": "Anna Berg was born in Lyon. Anna Berg studied painting in Paris.",
     "corpus": "book-b"},
    {"id": "b2", "title": "Lyon", "text": "Lyon is a city in France. The Rhone River flows through Lyon.",
     "corpus": "book-b"},
]
QUESTIONS = [
    {"id": "qa", "question": "Where was Anna Berg born?", "answers": ["Oslo"], "supporting_ids": ["a1"],
     "corpus": "book-a", "question_type": "Fact Retrieval"},
    {"id": "qb", "question": "Where was Anna Berg born?", "answers": ["Lyon"], "supporting_ids": ["b1"],
     "corpus": "book-b", "question_type": "Fact Retrieval"},
    {"id": "qb2", "question": "Which river flows through Lyon?", "answers": ["Rhone"], "supporting_ids": ["b2"],
     "corpus": "book-b", "question_type": "Fact Retrieval"},
]


def write_dataset(root: Path, corpus: list[dict[str, Any]], questions: list[dict[str, Any]]) -> Path:
    folder = root / "twobooks"
    (folder / "smoke").mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("questions.jsonl", questions)):
        (folder / "smoke" / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def config(tmp_path: Path, **over: Any) -> Any:
    write_dataset(tmp_path / "data", CORPUS, QUESTIONS)
    base: dict[str, Any] = {
        "experiment_name": "engine_test",
        "paths": {"data_dir": str(tmp_path / "data"), "cache_dir": str(tmp_path / "cache"),
                  "results_dir": str(tmp_path / "results"), "llm_cache": str(tmp_path / "llm.sqlite")},
        "dataset": {"name": "twobooks", "split": "smoke"},
        "llm": {"name": "fake"}, "embedder": {"name": "fake"},
        "atomizer": {"name": "sentence"}, "reader": {"name": "none"},
        "retriever": {"top_k": 5},
    }
    for k, v in over.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return load_harness_config(base)


def test_each_question_is_answered_from_its_own_corpus(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    metrics = run_one(cfg)
    idx = metrics["indexes"]
    assert set(idx) == {"book-a", "book-b"}
    assert idx["book-a"]["questions"] == 1 and idx["book-b"]["questions"] == 2
    assert idx["book-a"]["chunks"] == 3 and idx["book-b"]["chunks"] == 2
    # each index says how many window-repeated sentences it kept once (one chunk per passage: none)
    assert idx["book-a"]["window_repeats_merged"] == idx["book-b"]["window_repeats_merged"] == 0
    # the run's graph statistics are those of the disjoint union
    assert metrics["graph_stats"]["atoms"] == idx["book-a"]["atoms"] + idx["book-b"]["atoms"]
    assert metrics["graph_stats"]["corpora"] == 2
    preds = {p["question_id"]: p for p in map(json.loads, (run_dir(cfg) / "predictions.jsonl").open())}
    assert all(p.startswith("a") for p in preds["qa"]["retrieved_passages"])
    assert all(p.startswith("b") for p in preds["qb"]["retrieved_passages"])
    assert preds["qb"]["supporting_ids"] == ["b1"] and preds["qb"]["supporting_titles"] == ["Anna"]
    assert preds["qb2"]["retrieved_titles"][0] in ("Lyon", "Anna")
    assert preds["qa"]["seconds"]["retrieve"] > 0
    assert metrics["overall"]["recall@2"] == 100.0


def test_only_the_corpora_asked_about_are_indexed(tmp_path: Path) -> None:
    cfg = config(tmp_path, dataset={"limit": 1})  # one question, from book-a
    assert set(run_one(cfg)["indexes"]) == {"book-a"}


def test_dense_baseline_ranks_only_the_questions_corpus(tmp_path: Path) -> None:
    cfg = config(tmp_path, retriever={"name": "dense_passage", "passage_top_k": 5})
    metrics = run_one(cfg)
    assert set(metrics["indexes"]) == {"book-a", "book-b"} and metrics["graph_stats"] == {}
    preds = {p["question_id"]: p for p in map(json.loads, (run_dir(cfg) / "predictions.jsonl").open())}
    assert set(preds["qa"]["retrieved_passages"]) == {"a1", "a2", "a3"}
    assert set(preds["qb"]["retrieved_passages"]) == {"b1", "b2"}


def test_question_without_a_known_corpus_is_a_clear_error(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    bad = [dict(QUESTIONS[0], corpus="book-z")]
    write_dataset(tmp_path / "data2", CORPUS, bad)
    cfg.paths.data_dir = str(tmp_path / "data2")
    with pytest.raises(ValueError, match="book-z.*not one of the 2 indexed corpora"):
        run_one(cfg)


def test_library_and_harness_answer_alike(tmp_path: Path) -> None:
    """Same config, same documents: the library's atoms and scores are the harness's."""
    single = [dict(p, corpus=None) for p in CORPUS[:3]]
    write_dataset(tmp_path / "one", single, [dict(QUESTIONS[0], corpus=None)])
    cfg = config(tmp_path)
    cfg.paths.data_dir = str(tmp_path / "one")
    run_one(cfg)
    [pred] = map(json.loads, (run_dir(cfg) / "predictions.jsonl").open())
    rag = AtomicRAG(cfg, progress=False).index([{"doc_id": p["id"], "title": p["title"], "text": p["text"]}
                                                for p in single])
    [trace] = rag._engine.retrieve(rag._index(), rag_questions(QUESTIONS[0]["question"])).traces
    assert [a["atom_id"] for a in trace.candidates[0]] == [a["atom_id"] for a in pred["candidates"][0]]
    for x, y in zip(trace.candidates[0], pred["candidates"][0]):
        assert abs(x["score"] - y["score"]) < 1e-6


def rag_questions(text: str) -> list[Any]:
    from atomicrag.core.schemas import Question

    return [Question(id="q0", question=text)]


def test_pipeline_takes_the_fused_ppr_topk_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from atomicrag.retrieve.propagate.ppr import PPR

    calls = []
    original = PPR.topk

    def counting(self: Any, *args: Any, **kw: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kw)

    monkeypatch.setattr(PPR, "topk", counting)
    run_one(config(tmp_path))
    assert calls, "PPR.topk (the fused path the benchmark times) was not used"


def test_dense_baseline_runs_once_per_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sweep points that differ only in fields the baseline never reads share its run."""
    from atomicrag.harness import baselines, pipeline

    monkeypatch.setattr(baselines, "_MEMO", {})
    runs: list[str] = []
    real = pipeline.run_one

    def counting(cfg: Any) -> Any:
        runs.append(cfg.retriever.name)
        return real(cfg)

    monkeypatch.setattr(pipeline, "run_one", counting)
    for damping in (0.3, 0.5, 0.7):
        cfg = config(tmp_path, retriever={"damping": damping}, baselines=["dense_passage"], overwrite=True)
        rows = pipeline.run_with_baselines(cfg)
        assert rows[1][0] == "Vanilla RAG (dense passages)"
    assert runs.count("ppr") == 3 and runs.count("dense_passage") == 1


def test_llm_sampling_comes_from_the_config_with_stage_overrides(tmp_path: Path) -> None:
    from atomicrag.llm.fake import FakeLLM

    seen: list[Any] = []

    class Recording(FakeLLM):
        def chat(self, requests: list[Any]) -> list[Any]:
            seen.extend(requests)
            return super().chat(requests)

    cfg = config(tmp_path, llm={"temperature": 0.2, "max_tokens": 77, "seed": 5},
                 decompose={"name": "llm"}, sieve={"name": "llm"}, reader={"name": "precise", "max_tokens": 33})
    rag = AtomicRAG(cfg, llm=Recording(), progress=False).index(
        [{"doc_id": p["id"], "text": p["text"]} for p in CORPUS[:3]])
    result = rag.query("Where was Anna Berg born?")
    by_module = {r.module: r for r in seen}
    assert {r.temperature for r in seen} == {0.2} and {r.seed for r in seen} == {5}
    assert by_module["decompose"].max_tokens == 77  # llm.max_tokens
    assert by_module["sieve"].max_tokens == 512  # the sieve's own budget
    assert by_module["answer"].max_tokens == 33  # reader.max_tokens
    assert result.answer is not None


def test_registry_declarations_decide_what_is_built(tmp_path: Path) -> None:
    from atomicrag.core.needs import needs_llm

    assert not needs_llm(config(tmp_path))
    assert needs_llm(config(tmp_path, retriever={"query_entities": "llm"}))
    assert needs_llm(config(tmp_path, atomizer={"name": "vocabulary", "vocab_llm_filter": True}))
    assert not needs_llm(config(tmp_path, atomizer={"name": "vocabulary", "vocab_llm_filter": False}))
    # dense_passage builds no graph, so an LLM atomizer is not needed
    assert not needs_llm(config(tmp_path, atomizer={"name": "llm"}, retriever={"name": "dense_passage"}))


def test_a_new_retriever_is_one_builder_plus_one_registration(tmp_path: Path) -> None:
    """Registering a builder makes its name a valid config value and the engine uses it."""
    from atomicrag.core.registry import RETRIEVERS
    from atomicrag.retrieve.propagate.variants import WeightedBFS

    def one_hop(cfg: Any, **over: Any) -> Any:
        return WeightedBFS(decay=0.5, max_hops=1, device=cfg.device)

    with pytest.raises(ValueError, match="one_hop"):
        config(tmp_path, retriever={"name": "one_hop"})
    RETRIEVERS.register("one_hop", one_hop, needs={"graph", "embedder"})
    try:
        cfg = config(tmp_path, retriever={"name": "one_hop"})
        metrics = run_one(cfg)
        assert metrics["n_questions"] == 3 and metrics["graph_stats"]["atoms"] > 0
    finally:
        RETRIEVERS._paths.pop("one_hop"), RETRIEVERS._loaded.pop("one_hop"), RETRIEVERS._needs.pop("one_hop")


def test_run_with_baselines_keeps_the_main_row_first(tmp_path: Path) -> None:
    rows = run_with_baselines(config(tmp_path, baselines=["dense_atoms"]))
    assert [r[0] for r in rows] == ["AtomicRAG[ppr] w/o AQD w/o AS", "AtomicRAG[dense] w/o AQD w/o AS"]
