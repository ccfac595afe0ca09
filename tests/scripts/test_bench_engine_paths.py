"""The QA benchmark's systems run through ``Engine`` with config overrides; their contexts are the
ones the hand-wired pipeline (chunk → index → ``BatchRetriever`` and the reader's context builder /
``retrieve_passages`` → budget) gave for the same configuration, so committed QA records keep their
meaning."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def args_for(tmp_path: Path, data: Path, systems: list[str]) -> argparse.Namespace:
    return argparse.Namespace(split="smoke", embedder="fake", data_dir=str(data), merge_window_repeats=1,
                              max_tokens=384, context_tokens=600, answer_followup="auto", atoms_context=25,
                              llm="fake", concurrency=4, llm_threads=0, set=[], systems=systems,
                              cache_dir=str(tmp_path / "cache"))


def texts(contexts: list[list]) -> list[list[tuple[str, str]]]:
    return [[(c.passage_id, c.text) for c in ctx] for ctx in contexts]


def test_bench_qa_engine_contexts_equal_the_hand_wired_pipeline(tmp_path: Path, smoke_data: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import qa as bench_qa
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from atomicrag.data.loaders import load_dataset
    from atomicrag.data.token_windows import chunk_passages
    from atomicrag.engine import ConfigModels
    from atomicrag.engine.wiring import batch_retriever, context_builder
    from atomicrag.graph.cached_build import index_corpus
    from atomicrag.retrieve.dense_passage import retrieve_passages
    from atomicrag.retrieve.reader_context import fit_budget

    args = args_for(tmp_path, smoke_data, ["atomicrag", "vanilla", "gold", "atomicrag_atoms", "atomicrag_top5",
                                          "atomicrag_budget"])
    cfg = bench_qa.base_config(args)
    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir())
    questions = data.questions[1::2][:5]
    models = ConfigModels(cfg)
    ctx, ranked = bench_qa.passage_contexts(args, cfg, data, questions, models)
    more, more_ranked = bench_qa.atomic_contexts(args, cfg, data, questions, models)
    ctx.update(more)
    ranked.update(more_ranked)

    # the pipeline as the script wired it before it ran through Engine
    emb = models.embedder
    chunks = chunk_passages(data.passages, cfg.dataset)
    vcfg = dataclasses.replace(cfg, retriever=dataclasses.replace(cfg.retriever, passage_top_k=5))
    vtraces, vctx = retrieve_passages(questions, chunks, emb, vcfg)
    assert texts(ctx["vanilla"]) == texts([fit_budget(c, 600) for c in vctx])
    assert ranked["vanilla"] == [t.retrieved_passages for t in vtraces]
    graph = index_corpus(chunks, cfg, None, emb, args.cache_dir, data.name, progress=False)
    for system, reader_change, budget in (("atomicrag", {}, False), ("atomicrag_atoms", {"context": "atoms"}, True),
                                          ("atomicrag_top5", {"max_documents": 5}, False),
                                          ("atomicrag_budget", {}, False)):
        scfg = dataclasses.replace(cfg, reader=dataclasses.replace(cfg.reader, **reader_change))
        if system == "atomicrag_budget":  # the LLM option's document limit off
            scfg = dataclasses.replace(scfg, llm=dataclasses.replace(scfg.llm, reader_documents=0))
        res = batch_retriever(scfg, graph, emb).run(questions)
        contexts = context_builder(scfg, graph).fill(res)
        want = [fit_budget(c, 600) for c in contexts] if budget else contexts
        assert texts(ctx[system]) == texts(want), system
        assert ranked[system] == [t.retrieved_passages for t in res.traces], system
    assert texts(ctx["atomicrag_top5"]) != texts(ctx["atomicrag_atoms"])  # the systems differ
