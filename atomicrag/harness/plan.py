"""A run plan before any spending: LLM calls, tokens, cost and GPU memory of one configuration.

``python -m atomicrag.run ... plan=true`` prints this plan and exits 0 without loading a model;
a real run prints it first and records it next to the measured numbers in metrics.json
(``plan`` key). The inputs are the run's own: its corpus and questions, the requests its stages
will send (each stage gives its own through the Engine's API: ``atomize/estimate.py``,
``retrieve/estimate.py``, ``answer/estimate.py``, ``evaluate/estimate.py``), counted at the
tokenizers' mean characters per token (``estimate_tokens`` in ``plan_record.py``, with the plan's
record types and price table), its completion budgets and the LLM cache file it will read. Reply
lengths that recorded runs measured replace the assumed ones (``plan_lengths.py``).

What cannot be known before retrieval is assumed, with the assumption in the plan: the atoms a
sieve prompt holds (``retriever.top_k`` per query, merged over the sub-questions) and the text
of a retrieved atom (the corpus's mean sentence, or chunk for the chunk atomizer), the atoms a
sieve keeps. Completion tokens are given twice: expected (EXPECTED_REPLY) and at most (every
reply at its budget); calls under decomposition assume every question split fully (at most).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atomicrag.core.config import Config
from atomicrag.harness.plan_lengths import (  # noqa: F401  (re-exported: the plan's public names)
    STAGE_MODULE,
    STAGE_SHAPE,
    learn_reply_lengths,
    recorded_replies,
    recorded_roots,
)
from atomicrag.harness.plan_record import (  # noqa: F401  (re-exported: the plan's public names)
    ABSTRACT_READER_REPLY,
    DECOMPOSED_CANDIDATE_FACTOR,
    EDGES_PER_NODE,
    EMBEDDER_SIZES,
    ENTITIES_PER_ATOM,
    EXPECTED_REPLY,
    EXTRACTION_REPLY_FACTOR,
    PLAN_CHARS_PER_TOKEN,
    SIEVE_KEPT_PER_QUESTION,
    RunPlan,
    StagePlan,
    estimate_tokens,
    prices,
)

if TYPE_CHECKING:
    from atomicrag.engine.api import CacheProbe, ChatRequest


def _stage(name: str, requests: list[ChatRequest], budget: int, probe: CacheProbe, *,
           note: str = "", calls: int | None = None, expected: float | None = None) -> StagePlan:
    """A stage from its rendered requests (or a sample of them scaled to ``calls``); ``budget``:
    the completion budget of one call; ``expected``: its expected reply (EXPECTED_REPLY)."""
    n = len(requests) if calls is None else calls
    per_call = sum(estimate_tokens(r.messages) for r in requests) / len(requests) if requests else 0.0
    hits = probe.hits(requests) if calls is None else 0
    reply = min(budget, EXPECTED_REPLY[name] if expected is None else expected)
    return StagePlan(name, n, round(per_call * n), round(reply * n), hits, int(budget * n), note)


def plan_run(cfg: Config, *, label: str = "", sieve_candidates: float | None = None,
             sieve_kept: float | None = None, replies_exclude: Path | None = None) -> RunPlan:
    """The plan of one configuration; loads data and prompts only (no model, no network).

    ``sieve_candidates`` / ``sieve_kept``: atoms per sieve prompt / kept per question, when known
    (a measured run's ``stages.sieve``); default: retriever.top_k (x DECOMPOSED_CANDIDATE_FACTOR
    under decomposition) and SIEVE_KEPT_PER_QUESTION. Reply lengths come from recorded runs of the
    same model where there are some (``learn_reply_lengths``; ``replies_exclude``: not this run)."""
    from atomicrag.core.needs import needs
    from atomicrag.engine.api import (
        CacheProbe,
        atom_texts,
        decompose_requests,
        for_fidelity,
        index_requests,
        judge_requests,
        load_dataset,
        passage_context,
        query_ner_requests,
        reader_context,
        reader_requests,
        sieve_requests,
    )

    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
    passages, questions = data.passages, data.questions
    released = for_fidelity(cfg.fidelity)
    price_in, price_out = prices(cfg)
    plan = RunPlan(label or getattr(cfg, "row_label", None) or cfg.retriever.name, data.name, cfg.dataset.split,
                   len(passages), len(questions), f"{cfg.llm.name}:{cfg.llm.model}", price_in, price_out)
    plan.data_files = [str(f) for f in data.files]
    probe = CacheProbe(cfg)
    qtexts = [q.question for q in questions]
    atoms = atom_texts(cfg, passages)
    # each stage gives the requests it will send, as the run sends them (the probe finds their replies)
    graph = needs(cfg, "graph", ("retriever",))  # a passage retriever (dense_passage): no graph, no LLM stage
    reader_name = data.reader if cfg.reader.name == "dataset" else cfg.reader.name
    abstract = ABSTRACT_READER_REPLY if reader_name == "abstract" else None
    try:
        if not graph and reader_name != "none":  # a vanilla-RAG row: the reader reads retrieved chunks
            reqs = reader_requests(cfg, reader_name, qtexts, passage_context(cfg, passages), released)
            plan.stages.append(_stage("reader", reqs, cfg.reader.max_tokens, probe, calls=len(qtexts),
                                      expected=abstract, note=f"{cfg.retriever.passage_top_k} passages of "
                                      f"<= {cfg.dataset.chunk_tokens} tokens"))
        elif graph and cfg.atomizer.name == "llm":
            atomize = index_requests(cfg, passages, released)
            plan.stages.append(_stage("ner", atomize["ner"], cfg.atomizer.ner_max_tokens, probe))
            mean_passage = sum(len(p.text) for p in passages) / max(len(passages), 1) / PLAN_CHARS_PER_TOKEN
            plan.stages.append(_stage("extraction", atomize["extraction"], cfg.atomizer.extraction_max_tokens, probe,
                                      expected=EXTRACTION_REPLY_FACTOR * mean_passage,
                                      note="prompt without its entity list"))
        elif graph and cfg.atomizer.name == "vocabulary" and cfg.atomizer.vocab_llm_filter:
            plan.assumptions.append("atomizer=vocabulary: its term-filter calls are not estimated")
        decomposed = graph and cfg.decompose.name == "llm"
        queries_per_q = 1 + (cfg.decompose.max_sub_questions if decomposed else 0)
        if graph and cfg.retriever.query_entities == "llm":
            plan.stages.append(_stage("query_ner", query_ner_requests(cfg, qtexts, released),
                                      cfg.retriever.query_ner_max_tokens, probe,
                                      calls=len(qtexts) * queries_per_q if decomposed else None,
                                      note="at most: every question split fully" if decomposed else ""))
        if decomposed:
            reqs, budget = decompose_requests(cfg, qtexts, released)
            plan.stages.append(_stage("decompose", reqs, budget, probe))
        per_sub_query = cfg.sieve.sieve_target == "sub_query"  # one sieve prompt per query
        n_cands = cfg.retriever.top_k * (DECOMPOSED_CANDIDATE_FACTOR if decomposed and not per_sub_query else 1.0)
        if sieve_candidates is not None:
            n_cands = sieve_candidates
        kept = float(cfg.sieve.max_context)
        if graph and cfg.sieve.name == "llm":
            reqs, out_budget = sieve_requests(cfg, qtexts, atoms, round(n_cands), released)
            calls = len(qtexts) * (queries_per_q if per_sub_query else 1)
            plan.stages.append(_stage("sieve", reqs, out_budget, probe, calls=calls,
                                      note=f"~{n_cands:.0f} candidate atoms per prompt"
                                      + ("; at most: every question split fully" if per_sub_query and decomposed else "")))
            kept = SIEVE_KEPT_PER_QUESTION if sieve_kept is None else sieve_kept
            plan.assumptions.append(f"the sieve keeps ~{kept:g} atoms per question")
        if graph and reader_name != "none":
            reqs = reader_requests(cfg, reader_name, qtexts, reader_context(cfg, passages, atoms, kept), released)
            plan.stages.append(_stage("reader", reqs, cfg.reader.max_tokens, probe, calls=len(qtexts),
                                      expected=abstract))
            if reader_name == "abstract":
                plan.fixed_replies.add("reader")  # an abstract, not an answer: the answers measured do not apply
        judge = getattr(cfg, "judge", None)
        if judge is not None and judge.name != "none" and reader_name != "none":
            plan.stages.append(_judge_stage(cfg, judge_requests(cfg, questions), probe))
    finally:
        probe.close()
    plan.gpu_bytes = gpu_estimate(cfg, len(atoms))
    learn_reply_lengths(plan, cfg, exclude=replies_exclude)
    if graph and cfg.sieve.name == "llm" and sieve_candidates is None:
        plan.assumptions.append(f"candidates per sieve prompt: retriever.top_k={cfg.retriever.top_k}"
                                + (f" x {DECOMPOSED_CANDIDATE_FACTOR} (the sub-questions' merged)"
                                   if decomposed and not per_sub_query else ""))
    return plan


def _judge_stage(cfg: Any, requests: list[ChatRequest], probe: CacheProbe) -> StagePlan:
    """Graph-Bench answer accuracy (the judge's requests), on the judge's own LLM unless
    judge.llm_source=run."""
    stage = _stage("judge", requests, cfg.judge.max_tokens, probe, note="answer side sized as the reference")
    if cfg.judge.llm_source == "own":
        stage.price = prices(cfg.judge)
        stage.note += f"; judge llm {cfg.judge.llm.model}"
        stage.cached_calls = 0  # its own cache key, not probed
    return stage


def gpu_estimate(cfg: Config, n_atoms: int) -> dict[str, int]:
    """Bytes on the GPU per part, were each on CUDA: embedder weights and activations, the graph
    (CSR, float32 weights) and the PPR working set (float64 vectors of query_batch columns)."""
    key = Path(str(cfg.embedder.model)).name.lower()
    params_m, hidden, positions = EMBEDDER_SIZES.get(key, (335.0, 1024, 512))
    width = 4 if cfg.embedder.precision in ("auto", "fp32") and not getattr(cfg.embedder, "fp16", False) else 2
    weights = int(params_m * 1e6 * width)
    # activations of one batch: ~16 hidden-sized tensors per token alive at the widest layer
    seq = min(cfg.embedder.max_length, positions)  # the embedder clamps to the model's maximum
    acts = int(cfg.embedder.batch_size * seq * hidden * 16 * width)
    nodes = int(n_atoms * (1 + ENTITIES_PER_ATOM))
    edges = int(nodes * EDGES_PER_NODE) * 2
    graph = edges * (8 + 4) + (nodes + 1) * 8
    ppr_dtype = 8  # the exact solve and the power iteration run in float64
    ppr = 3 * min(cfg.retriever.query_batch, 1 << 30) * nodes * ppr_dtype
    vectors = n_atoms * hidden * 4
    return {"embedder_weights": weights, "embedder_activations": acts, "atom_vectors": vectors,
            "graph": graph, "ppr_blocks": ppr}


def planned(cfg: Config) -> dict[str, Any] | None:
    """Print the plan of ``cfg`` and return it as a dict, for a real run's metrics.json. A plan that
    cannot be made (an unpriced hosted model, say) is logged and the run goes on: the plan informs,
    it never stops a run the user started."""
    import logging

    log = logging.getLogger("atomicrag")
    try:
        plan = plan_run(cfg)
    except Exception as exc:  # noqa: BLE001 - informative only; said, never hidden
        log.warning("no run plan: %s: %s", type(exc).__name__, exc)
        return None
    print(plan.format(), flush=True)
    return plan.to_dict()


def actual_vs_plan(plan: dict[str, Any], modules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Estimated next to measured per stage (metrics.json ``cost.modules``), for metrics.json."""
    module_of = {"ner": "atomize", "extraction": "atomize", "query_ner": "retrieve_ner",
                 "decompose": "decompose", "sieve": "sieve", "reader": "answer", "judge": "judge"}
    out = {}
    for s in plan.get("stages", []):
        m = modules.get(module_of.get(s["stage"], s["stage"]), {})
        out[s["stage"]] = {"estimated_calls": s["calls"], "estimated_input_tokens": s["input_tokens"],
                           "estimated_output_tokens": s["output_tokens"],
                           "actual_calls": m.get("calls"), "actual_attempts": m.get("attempts"),
                           "actual_input_tokens": m.get("prompt_tokens"),
                           "actual_output_tokens": m.get("completion_tokens")}
        # measured over planned output tokens; a stage sharing its module (ner, extraction) gets none
        shared = sum(1 for t in plan.get("stages", []) if module_of.get(t["stage"]) == module_of.get(s["stage"]))
        if shared == 1 and s["output_tokens"] and m.get("completion_tokens") is not None:
            ratio = m["completion_tokens"] / s["output_tokens"]
            out[s["stage"]]["output_ratio"] = round(ratio, 3)
            out[s["stage"]]["output_within_30pct"] = abs(ratio - 1) <= 0.30
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m atomicrag.harness.plan OUT.json EXPERIMENT [OVERRIDE ...]``: the plan of one
    experiment row (as ``python -m atomicrag.run +experiment=EXPERIMENT ... plan=true`` prints it),
    printed and written to OUT.json, for records under results/plans/."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    from atomicrag.core.config import to_dataclass
    from atomicrag.harness.experiments import compose_experiment
    from atomicrag.harness.provenance import Provenance

    out, name, overrides = args[0], args[1], args[2:]
    command = ["python", "-m", "atomicrag.harness.plan", out, name, *overrides]
    prov = Provenance.start(command)
    cfg = to_dataclass(compose_experiment(name, overrides))
    try:
        plan = plan_run(cfg, label=f"{name} ({getattr(cfg, 'row_label', '') or cfg.retriever.name})")
    except ValueError as exc:
        print(f"atomicrag: error: {exc}", file=sys.stderr)
        return 2
    print(plan.format())
    record = plan.to_dict()
    record["command"] = " ".join(command)
    # commit, composed config, data file hashes: the record says what made it (no model was loaded)
    record["provenance"] = prov.finish(cfg, data_files=plan.data_files, uses_llm=False, uses_embedder=False)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(out).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
