"""Orchestration only: stage order, cache look-ups, trace assembly. Computes nothing itself.

``run_one(cfg)`` runs one configuration end to end and writes its run folder;
``run_with_baselines(cfg)`` adds the rows named in ``cfg.baselines`` (computed with the same
data, embedder and LLM settings) for a side-by-side table.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import time
from typing import Any

from .config import Config
from .failures import format_failures, summarize_run
from .schemas import QueryTrace
from .tracking import WandbSink, is_finished, read_metrics, run_dir, write_run

log = logging.getLogger("atomicrag")

# a baseline is a set of field overrides applied to the main configuration
BASELINES: dict[str, dict[str, Any]] = {
    # vanilla RAG: dense retrieval over passages, same reader and LLM
    "dense_passage": {"retriever.name": "dense_passage", "decompose.name": "none", "sieve.name": "none"},
    # AtomicRAG without the graph (paper's w/o ERGR): atoms ranked by similarity alone
    "dense_atoms": {"retriever.name": "dense"},
}


def with_overrides(cfg: Config, overrides: dict[str, Any]) -> Config:
    new = copy.deepcopy(cfg)
    for dotted, value in overrides.items():
        section, attr = dotted.split(".", 1)
        setattr(getattr(new, section), attr, value)
        getattr(new, section).__post_init__()
    return new


def row_label(cfg: Config) -> str:
    if cfg.retriever.name == "dense_passage":
        return "Vanilla RAG (dense passages)"
    parts = [f"AtomicRAG[{cfg.retriever.name}]"]
    if cfg.decompose.name == "none":
        parts.append("w/o AQD")
    if cfg.sieve.name == "none":
        parts.append("w/o AS")
    if cfg.atomizer.name == "chunk":
        parts.append("w/o KA")
    return " ".join(parts)


def run_with_baselines(cfg: Config) -> list[tuple[str, dict[str, Any]]]:
    rows = [(row_label(cfg), run_one(cfg))]
    for name in cfg.baselines:
        if name not in BASELINES:
            raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
        bcfg = with_overrides(cfg, BASELINES[name])
        if bcfg == cfg:
            continue
        rows.append((row_label(bcfg), run_one(bcfg)))
    return rows


def needs_llm(cfg: Config) -> bool:
    return (
        cfg.atomizer.name == "llm"
        or (cfg.atomizer.name == "vocabulary" and cfg.atomizer.vocab_llm_filter)
        or cfg.decompose.name == "llm"
        or cfg.sieve.name == "llm"
        or cfg.reader.name != "none"
        or cfg.judge.name == "llm"
        or cfg.retriever.query_entities == "llm"
    )


def run_one(cfg: Config) -> dict[str, Any]:
    """One configuration end to end: data → index → retrieve → answer → evaluate → results."""
    from .data.chunker import chunk_passages
    from .data.loaders import load_dataset
    from .embed.factory import build_embedder
    from .evaluate.score import score_run
    from .llm.accounting import Accountant
    from .llm.factory import build_llm

    out_dir = run_dir(cfg)
    if is_finished(out_dir) and not cfg.overwrite:
        log.info("run %s is finished; reusing it (overwrite=true to redo)", out_dir)
        return read_metrics(out_dir)
    t_start = time.perf_counter()
    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir())
    questions = data.questions
    accountant = Accountant()
    embedder = build_embedder(cfg.embedder, cfg.fidelity)
    llm = build_llm(cfg.llm, cfg.paths, accountant) if needs_llm(cfg) else None
    reader_name = data.reader if cfg.reader.name == "dataset" else cfg.reader.name
    graph_stats: dict[str, Any] = {}
    atomize_stats: dict[str, Any] = {}  # failed chunks of this run's atomization (failures.py)
    try:
        with accountant.time("chunk"):
            chunks = chunk_passages(data.passages, cfg.dataset)
        t_query = time.perf_counter()
        if cfg.retriever.name == "dense_passage":
            from .retrieve.dense_passage import retrieve_passages

            with accountant.time("retrieve"):
                traces, contexts = retrieve_passages(questions, chunks, embedder, cfg)
        else:
            from .graph.index import index_corpus
            from .graph.stats import graph_stats as compute_graph_stats
            from .retrieve.engine import QueryEngine

            with accountant.time("index"):
                graph = index_corpus(chunks, cfg, llm, embedder, cfg.paths.cache_dir, data.name)
            graph_stats = compute_graph_stats(graph)
            atomize_stats = graph.meta.get("atomize_stats", {})
            t_query = time.perf_counter()
            engine = QueryEngine(cfg, graph, embedder, llm, accountant)
            traces, contexts = engine.run(questions)
        if reader_name != "none" and llm is not None:
            from .answer.readers import build_reader

            reader = build_reader(reader_name, llm, cfg.reader, dataset_reader=data.reader)
            with accountant.time("answer"):
                outputs = reader.answer([q.question for q in questions], contexts)
            for t, o in zip(traces, outputs):
                t.answer, t.raw_answer = o.answer, o.raw
                if o.failed:
                    t.errors.append(f"reader: {o.error}")
        query_wall = time.perf_counter() - t_query
        judge = None
        if cfg.judge.name == "llm" and llm is not None:
            from .evaluate.judge import build_judge

            judge = build_judge("llm", llm, embedder, cfg.fidelity)
        with accountant.time("judge"):
            metrics, per_question = score_run(questions, traces, judge=judge, dataset=data.name,
                                              answered=reader_name != "none" and llm is not None)
    finally:
        if llm is not None:
            llm.close()
    wall = time.perf_counter() - t_start
    metrics.update(
        {
            "dataset": data.name,
            "split": cfg.dataset.split,
            "n_questions": len(questions),
            "row_label": row_label(cfg),
            "graph_stats": graph_stats,
            "cost": cost_summary(accountant, len(questions), query_wall, wall),
            "models": {"llm": cfg.llm.model if llm is not None else None, "embedder": embedder.name},
            "config": summary_fields(cfg),
        }
    )
    predictions = [
        {**t.to_dict(), **pq} for t, pq in zip(traces, per_question)
    ]
    metrics.update(summarize_run(cfg.max_failure_rate, metrics["cost"]["modules"], predictions, atomize_stats))
    if metrics["status"] != "finished":
        log.error("%s", format_failures(str(out_dir), metrics))
    write_run(out_dir, cfg, metrics, predictions)
    if cfg.logger.name == "wandb":
        sink = WandbSink(cfg)
        sink.log_run(metrics, predictions)
        sink.finish()
    log.info("wrote %s", out_dir)
    return read_metrics(out_dir)


QA_MODULES = ("decompose", "retrieve_ner", "sieve", "answer")  # LLM modules of answering a question


def cost_summary(accountant: Any, n_questions: int, query_wall: float, wall: float) -> dict[str, Any]:
    """Tables 4 and 7: tokens and time per module, per run and per question."""
    acc = accountant.to_dict()
    mods = acc["modules"]
    n = max(n_questions, 1)
    qa_tokens = sum(mods.get(m, {}).get("total_tokens", 0) for m in QA_MODULES)
    index_tokens = mods.get("atomize", {}).get("total_tokens", 0)
    retrieve_s = mods.get("retrieve", {}).get("wall_s", 0.0)
    return {
        "modules": mods,
        "total_prompt_tokens": acc["total"]["prompt_tokens"],
        "total_completion_tokens": acc["total"]["completion_tokens"],
        "index_tokens": index_tokens,
        "qa_tokens": qa_tokens,
        "tokens_per_query": qa_tokens / n,
        "seconds_per_query": query_wall / n,
        "retrieval_ms_per_query": 1000.0 * retrieve_s / n,
        "wall_seconds": wall,
    }


def summary_fields(cfg: Config) -> dict[str, Any]:
    """The handful of config values the paper's tables are keyed by."""
    return {
        "retriever": cfg.retriever.name,
        "atomizer": cfg.atomizer.name,
        "embedder": cfg.embedder.model,
        "llm": cfg.llm.model,
        "decompose": cfg.decompose.name,
        "sieve": cfg.sieve.name,
        "damping": cfg.retriever.damping,
        "atom_seed_weight": cfg.retriever.atom_seed_weight,
        "top_k": cfg.retriever.top_k,
        "max_context": cfg.sieve.max_context,
        "fidelity": cfg.fidelity.preset,
        "fidelity_fields": dataclasses.asdict(cfg.fidelity),
    }


__all__ = ["run_one", "run_with_baselines", "with_overrides", "BASELINES", "QueryTrace"]
