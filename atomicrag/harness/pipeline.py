"""Orchestration only: stage order, cache look-ups, trace assembly. Computes nothing itself.

``run_one(cfg)`` runs one configuration end to end and writes its run folder;
``run_with_baselines(cfg)`` adds the rows named in ``cfg.baselines`` (computed with the same
data, embedder and LLM settings) for a side-by-side table.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from atomicrag.core.config import Config
from atomicrag.core.schemas import QueryTrace
from atomicrag.engine.answer_checkpoint import CHECKPOINT_NAME
from atomicrag.engine.failures import format_failures, summarize_run
from atomicrag.harness.baselines import BASELINES, baseline_config, run_baseline, with_overrides
from atomicrag.harness.differences import switches
from atomicrag.harness.metrics_file import build_run_metrics
from atomicrag.harness.provenance import Provenance
from atomicrag.harness.rows import COMPONENTS, ablated
from atomicrag.harness.tracking import WandbSink, is_finished, read_metrics, run_dir, write_run

log = logging.getLogger("atomicrag")


def retriever_label(cfg: Config) -> str:
    """The retriever a row runs, as the command named it: ``retriever=hybrid`` runs the ``ppr``
    propagation with hybrid seeding, and its row says ``hybrid``. The Hydra choice is used only
    while it still describes ``cfg`` (a baseline row that swaps the retriever gets its own name)."""
    from hydra.core.hydra_config import HydraConfig

    from atomicrag.core.compose import group_config, has_option

    choice = HydraConfig.get().runtime.choices.get("retriever") if HydraConfig.initialized() else None
    named = group_config("retriever", choice).name if has_option("retriever", choice) else None
    return str(choice) if named == cfg.retriever.name else cfg.retriever.name


def row_label(cfg: Config) -> str:
    """The label of a run without an experiment's ``row_label``: its retriever, then the ablations
    it runs (conf/ablation/, read by atomicrag.harness.rows); ERGR's is the retriever already named."""
    if cfg.retriever.name == "dense_passage":
        return "Vanilla RAG (dense passages)"
    parts = [f"AtomicRAG[{retriever_label(cfg)}]"]
    parts += [f"w/o {COMPONENTS[c]}" for c in ablated(lambda key: _field(cfg, key)) if c != "ergr"]
    return " ".join(parts)


def _field(cfg: Any, key: str) -> Any:
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def run_with_baselines(cfg: Config) -> list[tuple[str, dict[str, Any]]]:
    from atomicrag.engine.api import shared_backends

    with shared_backends():  # the rows share one LLM server (one launch, not one per row)
        rows = [(row_label(cfg), run_one(cfg))]
        for name in cfg.baselines:
            bcfg = baseline_config(cfg, name)
            if with_overrides(cfg, BASELINES[name]) == cfg:  # the main row already is this baseline
                continue
            rows.append((row_label(bcfg), run_baseline(bcfg, run_one)))
    return rows


def run_one(cfg: Config) -> dict[str, Any]:
    """One configuration end to end: data → index → retrieve → answer → evaluate → results."""
    from atomicrag.engine import ConfigModels, Engine, combined_stats
    from atomicrag.engine.api import Accountant, load_dataset, score_run
    from atomicrag.harness.differences import differences, prompt_source

    prompts = prompt_source(cfg)  # fidelity.prompts=released without a checkout stops here, before any work
    out_dir = run_dir(cfg)
    if is_finished(out_dir) and not cfg.overwrite:
        log.info("run %s is finished; reusing it (overwrite=true to redo)", out_dir)
        return read_metrics(out_dir)
    from atomicrag.harness.plan import planned

    run_plan = planned(cfg)  # printed before any spending; recorded next to the measured numbers
    from atomicrag.harness.gpu_share import choose_llm_server_share

    gpu_share = choose_llm_server_share(cfg, run_plan)  # before the models (and the server) start
    t_start = time.perf_counter()
    prov = Provenance.start()
    seed_everything(cfg.seed)
    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
    questions = data.questions
    accountant = Accountant()
    models = ConfigModels(cfg, accountant)
    engine = Engine(cfg, models, accountant, cache_dir=cfg.paths.cache_dir, dataset_name=data.name)
    reader_name = data.reader if cfg.reader.name == "dataset" else cfg.reader.name
    try:
        index = engine.index_passages(data.passages, questions=questions)
        t_query = time.perf_counter()
        batch = engine.retrieve(index, questions)
        if reader_name != "none":  # a killed run's answers are in the run folder's checkpoint: reused
            engine.answer(batch, reader_name, checkpoint=out_dir / CHECKPOINT_NAME)
            if batch.resumed_answers:
                log.info("resumed: reused %d of %d answers of an earlier, unfinished run of %s",
                         batch.resumed_answers, len(questions), out_dir)
        traces = batch.traces
        query_wall = time.perf_counter() - t_query
        llm_used = models.llm_built  # read before close() drops the model
        from atomicrag.engine.api import judge_from_config  # its own LLM/embedder (cfg.judge)

        run_llm = models.llm if cfg.judge.name != "none" and cfg.judge.llm_source == "run" else None
        judge = judge_from_config(cfg, run_llm, models.embedder, accountant)
        metrics_judge = None
        try:
            with accountant.time("judge"):
                scores, per_question = score_run(questions, traces, judge=judge, dataset=data.name,
                                                 answered=reader_name != "none")
        finally:
            if judge is not None:
                judge.close()
                metrics_judge = judge.settings
    finally:
        models.close()
    wall = time.perf_counter() - t_start
    indexes = index.stats(batch.routed)
    run = {
        "dataset": data.name,
        "split": cfg.dataset.split,
        "n_questions": len(questions),
        "row_label": cfg.row_label or row_label(cfg),
        "graph_stats": combined_stats(indexes),
        "indexes": indexes,  # one per corpus (Graph-Bench Novel: one per novel)
        "stages": stage_summaries(cfg, batch),
        "cost": cost_summary(accountant, len(questions), query_wall, wall),
        "models": {"llm": cfg.llm.model if llm_used else None, "embedder": models.embedder.name},
        "config": summary_fields(cfg),
        "prompts": prompts,
        "differences": differences(cfg, uses_llm=llm_used),
        "judge_settings": metrics_judge,
        "provenance": prov.finish(cfg, data_files=data.files, uses_llm=llm_used),
    }
    if reader_name != "none":  # answers taken from the checkpoint of an earlier, killed run
        run["resumed_answers"] = batch.resumed_answers
    passages = data.passage_index()
    predictions = [
        {**t.to_dict(), **pq, **gold_fields(q, t, passages)} for q, t, pq in zip(questions, traces, per_question)
    ]
    if gpu_share is not None:
        run["gpu_memory"] = gpu_share
    if run_plan is not None:
        from atomicrag.harness.plan import actual_vs_plan

        run["plan"] = {"estimate": run_plan, "vs_actual": actual_vs_plan(run_plan, run["cost"]["modules"])}
    outcome = summarize_run(cfg.max_failure_rate, run["cost"]["modules"], predictions, index.atomize_stats())
    metrics = build_run_metrics(scores, run, outcome, out_dir, cfg.experiment_name)
    if metrics.status != "finished":
        log.error("%s", format_failures(str(out_dir), metrics.to_dict()))
    write_run(out_dir, cfg, metrics, predictions)
    if metrics.status == "finished":  # its answers are in predictions.jsonl now; a failed run keeps them
        (out_dir / CHECKPOINT_NAME).unlink(missing_ok=True)
    if cfg.logger.name == "wandb":
        sink = WandbSink(cfg)
        sink.log_run(metrics.to_dict(), predictions, out_dir)
        sink.finish()
    log.info("wrote %s", out_dir)
    return read_metrics(out_dir)


def seed_everything(seed: int) -> None:
    """``Config.seed``: Python's, NumPy's and torch's global generators, for any stochastic step
    that does not take its own seed (stages with their own, e.g. ``retriever.rng_seed``, keep it)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def gold_fields(q: Any, trace: Any, passages: dict[str, Any]) -> dict[str, Any]:
    """predictions.jsonl: the gold supporting ids and the titles of gold and retrieved passages."""
    def title(pid: str) -> str:
        p = passages.get(pid)
        return p.title if p is not None else ""

    return {
        "supporting_ids": list(q.supporting_ids),
        "supporting_titles": [title(p) for p in q.supporting_ids],
        "retrieved_titles": [title(p) for p in trace.retrieved_passages],
        "corpus": q.corpus,
    }


def stage_summaries(cfg: Config, batch: Any) -> dict[str, Any]:
    """Run-level counts of the LLM stages (failures are reported, never hidden)."""
    out: dict[str, Any] = {}
    decomps = [d for d in batch.decompositions if d is not None]
    if decomps and cfg.decompose.name != "none":
        from atomicrag.engine.api import decompose_summary

        out["decompose"] = decompose_summary(decomps)
    sieved = [s for s in batch.sieve if s is not None]
    if sieved and cfg.sieve.name != "none":
        from atomicrag.engine.api import sieve_summary

        out["sieve"] = sieve_summary(sieved)
    if batch.outputs:
        from atomicrag.engine.api import reader_summary

        out["reader"] = reader_summary(batch.outputs)
        # the LLM option's document limit in force (0: the budget's; None: atoms), as in each row
        if cfg.reader.uses_documents(cfg.fidelity.preset):
            out["reader"]["reader_documents"] = cfg.reader.document_limit(cfg.llm.reader_documents, cfg.llm.params_b)
    return out


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
        # the released retrieval_time also times the decomposition and sieve calls
        "retrieval_ms_per_query_released": 1000.0 * sum(
            mods.get(m, {}).get("wall_s", 0.0) for m in ("decompose", "retrieve", "sieve")) / n,
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
        # every switch by name, wherever its section (the shape records had when all were in fidelity)
        "fidelity_fields": {name: getattr(getattr(cfg, section), name) for section, name in switches()},
    }


__all__ = ["BASELINES", "QueryTrace", "run_one", "run_with_baselines", "with_overrides"]
