"""A run plan before any spending: LLM calls, tokens, cost and GPU memory of one configuration.

``python -m atomicrag.run ... plan=true`` prints this plan and exits 0 without loading a model;
a real run prints it first and records it next to the measured numbers in metrics.json
(``plan`` key). The inputs are the run's own: its corpus and questions, the prompts its stages
will send (rendered with the project's prompt builders, counted at the tokenizers' mean characters
per token, ``estimate_tokens`` in ``plan_record.py``, with the plan's record types and price table), its completion budgets and the LLM cache file it will read.

What cannot be known before retrieval is assumed, with the assumption in the plan: the atoms a
sieve prompt holds (``retriever.top_k`` per query, merged over the sub-questions) and the text
of a retrieved atom (the corpus's mean sentence, or chunk for the chunk atomizer), the atoms a
sieve keeps. Completion tokens are given twice: expected (EXPECTED_REPLY) and at most (every
reply at its budget); calls under decomposition assume every question split fully (at most).
"""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from atomicrag.core.config import Config
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
from atomicrag.llm.cache import cache_key
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.sampling import request_seed

# sentence boundaries of the corpus text (the sentence atomizer's atoms, estimated)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def _atoms(passages: list[Any], cfg: Config) -> list[str]:
    """The atom texts the index will hold, as near as can be told without building it."""
    if cfg.atomizer.name == "chunk" or getattr(cfg.atomizer, "atom_unit", "atoms") == "chunks":
        return [p.text for p in passages]
    out = []
    for p in passages:
        for sent in _SENTENCE.split(p.text.strip()):
            if sent:
                out.append(f"{p.title}: {sent}" if cfg.atomizer.title_context and p.title else sent)
    return out


def _typical(texts: list[str], n: int) -> list[str]:
    """``n`` texts of the corpus's mean length (the candidates a prompt holds, in length)."""
    if not texts or n <= 0:
        return []
    mean = sum(len(t) for t in texts) / len(texts)
    best = min(texts, key=lambda t: abs(len(t) - mean))
    return [best] * n


class _CacheProbe:
    """Looks requests up in the run's LLM cache file (read-only; a missing file = no hits)."""

    def __init__(self, cfg: Config) -> None:
        self.key_model = f"{cfg.llm.name}:{cfg.llm.model}:{cfg.llm.model_path or ''}"
        path = Path(cfg.paths.llm_cache)
        self.conn = None
        if cfg.llm.cache and path.is_file():
            try:
                self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                self.conn.execute("SELECT 1 FROM llm_cache LIMIT 1")
            except sqlite3.DatabaseError:
                self.conn = None

    def hits(self, requests: list[ChatRequest]) -> int:
        if self.conn is None or not requests:
            return 0
        keys = [cache_key(self.key_model, r) for r in requests]
        found = 0
        for i in range(0, len(keys), 500):  # the keys go in as one JSON parameter: no SQL is built
            part = json.dumps(keys[i:i + 500])
            found += self.conn.execute("SELECT COUNT(*) FROM llm_cache WHERE key IN (SELECT value FROM json_each(?))",
                                       (part,)).fetchone()[0]
        return found

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def _stage(name: str, requests: list[ChatRequest], budget: int, probe: _CacheProbe, *,
           note: str = "", calls: int | None = None, expected: float | None = None) -> StagePlan:
    """A stage from its rendered requests (or a sample of them scaled to ``calls``); ``budget``:
    the completion budget of one call; ``expected``: its expected reply (EXPECTED_REPLY)."""
    n = len(requests) if calls is None else calls
    per_call = sum(estimate_tokens(r.messages) for r in requests) / len(requests) if requests else 0.0
    hits = probe.hits(requests) if calls is None else 0
    reply = min(budget, EXPECTED_REPLY[name] if expected is None else expected)
    return StagePlan(name, n, round(per_call * n), round(reply * n), hits, int(budget * n), note)


# the metrics.json ``cost.modules`` entry that measures each plan stage alone (the atomizer's one
# module holds both ner and extraction, and the judge may run another model: both stay assumed)
STAGE_MODULE = {"query_ner": "retrieve_ner", "decompose": "decompose", "sieve": "sieve", "reader": "answer"}
# how much of a run's (dataset, decompose, sieve) shapes a stage's replies: a sieve prompt after
# decomposition holds the sub-questions' candidates; the reader reads what the sieve kept
STAGE_SHAPE = {"query_ner": 1, "decompose": 2, "sieve": 3, "reader": 3}


def recorded_replies(model: str, roots: list[Path], exclude: Path | None = None,
                     shape: tuple[str, str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Per plan stage, the completion tokens per question that recorded runs of ``model`` (the
    metrics.json files under ``roots``; failed runs too: their replies were real) measured, over
    every run's questions together: ``{stage: {"tokens_per_question", "questions", "runs"}}``.
    Per question, not per call: retries of unreadable replies and the reader's follow-ups are
    calls the plan does not count, and their tokens are part of what a question costs.

    ``shape`` (dataset, decompose, sieve): only runs alike in what shapes the stage (STAGE_SHAPE:
    the dataset for query NER, and decompose for decomposition, and the sieve for sieve and reader)
    are used; another dataset or module set does not measure this one. None: every run of the model."""
    import logging

    per_run: list[tuple[tuple[str, str, str], str, float, int]] = []
    seen: set[Path] = {(Path(exclude) / "metrics.json").resolve()} if exclude is not None else set()
    for root in roots:
        for path in sorted(Path(root).glob("**/metrics.json")) if Path(root).is_dir() else []:
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                metrics = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                logging.getLogger("atomicrag").warning("plan: skipping unreadable %s: %s", path, exc)
                continue
            if not isinstance(metrics, dict) or (metrics.get("models") or {}).get("llm") != model:
                continue
            n = metrics.get("n_questions") or 0
            summary = metrics.get("config") if isinstance(metrics.get("config"), dict) else {}
            run_shape = (str(metrics.get("dataset")), str(summary.get("decompose")), str(summary.get("sieve")))
            modules = (metrics.get("cost") or {}).get("modules") or {}
            for stage, module in STAGE_MODULE.items():
                m = modules.get(module) or {}
                if n > 0 and m.get("calls") and m.get("completion_tokens"):
                    per_run.append((run_shape, stage, float(m["completion_tokens"]), int(n)))
    out: dict[str, dict[str, Any]] = {}
    for stage in STAGE_MODULE:
        k = STAGE_SHAPE[stage]
        use = [r for r in per_run if r[1] == stage and (shape is None or r[0][:k] == shape[:k])]
        if use:
            tok, n = sum(r[2] for r in use), sum(r[3] for r in use)
            out[stage] = {"tokens_per_question": tok / n, "questions": n, "runs": len(use)}
    return out


def recorded_roots(cfg: Config) -> list[Path]:
    """Where recorded runs are looked for: this configuration's run folder root and the checkout's
    committed results/ (the published records)."""
    from atomicrag.core.compose import CONF_DIR

    return [Path(cfg.paths.results_dir), CONF_DIR.parent / "results"]


def learn_reply_lengths(plan: RunPlan, cfg: Config, roots: list[Path] | None = None,
                        exclude: Path | None = None) -> None:
    """Replace the assumed reply length (EXPECTED_REPLY) of each stage that recorded runs of the
    same model measured by their completion tokens per question (``recorded_replies``); say
    which stages, and which stay assumed. ``exclude``: a run folder not to learn from (a plan
    checked against that run). Not capped at the completion budget: retries exceed it."""
    if cfg.llm.name == "fake":
        return  # the fake LLM's replies say nothing about a model's
    shape = (plan.dataset, cfg.decompose.name, cfg.sieve.name)
    found = recorded_replies(cfg.llm.model, recorded_roots(cfg) if roots is None else roots, exclude, shape)
    learned, assumed = [], []
    for st in plan.stages:
        rec = found.get(st.stage)
        if rec is None or not st.calls or st.stage in plan.fixed_replies:
            assumed.append(st.stage)
            continue
        st.output_tokens = round(rec["tokens_per_question"] * plan.n_questions)
        learned.append(f"{st.stage} {rec['tokens_per_question']:.0f} ({rec['questions']} questions, {rec['runs']} runs)")
    if learned:
        plan.assumptions.append(f"reply tokens per question measured by recorded runs of {cfg.llm.model} on "
                                f"{plan.dataset} with the same modules: " + ", ".join(learned))
    if assumed:
        plan.assumptions.append(f"reply tokens per call assumed (EXPECTED_REPLY; no recorded run of "
                                f"{cfg.llm.model} alike measures them): {', '.join(assumed)}")


def _sent_cap(cfg: Config, budget: int) -> int | None:
    """The max_tokens a stage sends: none under fidelity.budgets=released (the plan still bounds
    the stage's output by ``budget``)."""
    return None if cfg.fidelity.budgets == "released" else budget


def _window(cfg: Config) -> int | None:
    """The context window the stages fit prompts into (llm/backends.py's choice)."""
    return cfg.llm.n_ctx if cfg.llm.name == "llamacpp" else cfg.llm.max_model_len if cfg.llm.name == "vllm" else None


def _fitted(build: Any, items: list[str], cfg: Config, max_tokens: int) -> list[str]:
    """The prefix of ``items`` the stage will send: it cuts what does not fit the window."""
    from atomicrag.llm.budget import fit_items

    return fit_items(build, items, _window(cfg), max_tokens)[0]


def plan_run(cfg: Config, *, label: str = "", sieve_candidates: float | None = None,
             sieve_kept: float | None = None, replies_exclude: Path | None = None) -> RunPlan:
    """The plan of one configuration; loads data and prompts only (no model, no network).

    ``sieve_candidates`` / ``sieve_kept``: atoms per sieve prompt / kept per question, when known
    (a measured run's ``stages.sieve``); default: retriever.top_k (x DECOMPOSED_CANDIDATE_FACTOR
    under decomposition) and SIEVE_KEPT_PER_QUESTION. Reply lengths come from recorded runs of the
    same model where there are some (``learn_reply_lengths``; ``replies_exclude``: not this run)."""
    from atomicrag.data.loaders import load_dataset
    from atomicrag.prompts import decompose as decompose_prompt
    from atomicrag.prompts import extraction as extraction_prompt
    from atomicrag.prompts import ner as ner_prompt
    from atomicrag.prompts import reader as reader_prompt
    from atomicrag.prompts import sieve as sieve_prompt
    from atomicrag.prompts.released import for_fidelity

    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
    passages, questions = data.passages, data.questions
    released = for_fidelity(cfg.fidelity)
    price_in, price_out = prices(cfg)
    plan = RunPlan(label or getattr(cfg, "row_label", None) or cfg.retriever.name, data.name, cfg.dataset.split,
                   len(passages), len(questions), f"{cfg.llm.name}:{cfg.llm.model}", price_in, price_out)
    plan.data_files = [str(f) for f in data.files]
    probe = _CacheProbe(cfg)
    qtexts = [q.question for q in questions]
    # the NER requests as the run sends them (so the cache probe finds their replies)
    ner_schema = None if cfg.fidelity.extraction_replies == "released" else ner_prompt.SCHEMA
    seed = request_seed(cfg.llm.seed, cfg.fidelity)
    atoms = _atoms(passages, cfg)
    from atomicrag.core.needs import needs

    graph = needs(cfg, "graph", ("retriever",))  # a passage retriever (dense_passage): no graph, no LLM stage
    try:
        if not graph:
            _passage_row(cfg, plan, passages, qtexts, data.reader, released, probe)
        elif cfg.atomizer.name == "llm":
            reqs = [ChatRequest(ner_prompt.build_messages(p.text, p.title, released), ner_schema,
                                max_tokens=_sent_cap(cfg, cfg.atomizer.ner_max_tokens), seed=seed) for p in passages]
            plan.stages.append(_stage("ner", reqs, cfg.atomizer.ner_max_tokens, probe))
            reqs = [ChatRequest(extraction_prompt.build_messages(p.text, [], p.title), None,
                                max_tokens=_sent_cap(cfg, cfg.atomizer.extraction_max_tokens), seed=seed)
                    for p in passages]
            mean_passage = sum(len(p.text) for p in passages) / max(len(passages), 1) / PLAN_CHARS_PER_TOKEN
            plan.stages.append(_stage("extraction", reqs, cfg.atomizer.extraction_max_tokens, probe,
                                      expected=EXTRACTION_REPLY_FACTOR * mean_passage,
                                      note="prompt without its entity list"))
        elif cfg.atomizer.name == "vocabulary" and cfg.atomizer.vocab_llm_filter:
            plan.assumptions.append("atomizer=vocabulary: its term-filter calls are not estimated")
        decomposed = graph and cfg.decompose.name == "llm"
        queries_per_q = 1 + (cfg.decompose.max_sub_questions if decomposed else 0)
        if graph and cfg.retriever.query_entities == "llm":
            reqs = [ChatRequest(ner_prompt.build_messages(q, released=released), ner_schema,
                                max_tokens=_sent_cap(cfg, cfg.retriever.query_ner_max_tokens), seed=seed)
                    for q in qtexts]
            plan.stages.append(_stage("query_ner", reqs, cfg.retriever.query_ner_max_tokens, probe,
                                      calls=len(qtexts) * queries_per_q if decomposed else None,
                                      note="at most: every question split fully" if decomposed else ""))
        if decomposed:
            budget = cfg.decompose.max_tokens or cfg.llm.max_tokens
            reqs = [ChatRequest(decompose_prompt.build_messages(
                q, max_sub_questions=cfg.decompose.max_sub_questions, threshold=cfg.decompose.complexity_threshold,
                trigger=cfg.decompose.decompose_trigger, released=released),
                None if cfg.decompose.decompose_parse == "released" else decompose_prompt.SCHEMA,
                max_tokens=budget, seed=request_seed(cfg.llm.seed, cfg.fidelity)) for q in qtexts]
            plan.stages.append(_stage("decompose", reqs, budget, probe))
        per_sub_query = cfg.sieve.sieve_target == "sub_query"  # one sieve prompt per query
        n_cands = cfg.retriever.top_k * (DECOMPOSED_CANDIDATE_FACTOR if decomposed and not per_sub_query else 1.0)
        if sieve_candidates is not None:
            n_cands = sieve_candidates
        kept = float(cfg.sieve.max_context)
        if graph and cfg.sieve.name == "llm":
            cands = _typical(atoms, round(n_cands))
            if cfg.sieve.sieve_prompt == "released" and released is not None:
                from atomicrag.prompts import released_sieve
                rs = released_sieve.load(released.root)
                build = rs.messages
                out_budget = rs.max_tokens
            else:
                build = sieve_prompt.build_messages
                out_budget = cfg.sieve.max_tokens
            reqs = [ChatRequest(build(q, _fitted(lambda c, q=q: build(q, c), cands, cfg, out_budget)), None,
                                max_tokens=out_budget) for q in qtexts]
            calls = len(qtexts) * (queries_per_q if per_sub_query else 1)
            plan.stages.append(_stage("sieve", reqs, out_budget, probe, calls=calls,
                                      note=f"~{n_cands:.0f} candidate atoms per prompt"
                                      + ("; at most: every question split fully" if per_sub_query and decomposed else "")))
            kept = SIEVE_KEPT_PER_QUESTION if sieve_kept is None else sieve_kept
            plan.assumptions.append(f"the sieve keeps ~{kept:g} atoms per question")
        reader_name = data.reader if cfg.reader.name == "dataset" else cfg.reader.name
        if graph and reader_name != "none":
            context = _reader_context(cfg, passages, atoms, kept)
            style = cfg.reader.reader_context
            def build_reader(q: str, c: list[str]) -> list[dict[str, str]]:
                return reader_prompt.build_messages(reader_name, q, c, style, released)

            reqs = [ChatRequest(build_reader(q, _fitted(lambda c, q=q: build_reader(q, c), context, cfg,
                                                        cfg.reader.max_tokens)), None,
                                max_tokens=cfg.reader.max_tokens) for q in qtexts]
            plan.stages.append(_stage("reader", reqs, cfg.reader.max_tokens, probe, calls=len(qtexts),
                                      expected=ABSTRACT_READER_REPLY if reader_name == "abstract" else None))
            if reader_name == "abstract":
                plan.fixed_replies.add("reader")  # an abstract, not an answer: the answers measured do not apply
        judge = getattr(cfg, "judge", None)
        if judge is not None and judge.name != "none" and reader_name != "none":
            plan.stages.append(_judge_stage(cfg, questions, probe))
    finally:
        probe.close()
    plan.gpu_bytes = gpu_estimate(cfg, len(atoms))
    learn_reply_lengths(plan, cfg, exclude=replies_exclude)
    if graph and cfg.sieve.name == "llm" and sieve_candidates is None:
        plan.assumptions.append(f"candidates per sieve prompt: retriever.top_k={cfg.retriever.top_k}"
                                + (f" x {DECOMPOSED_CANDIDATE_FACTOR} (the sub-questions' merged)"
                                   if decomposed and not per_sub_query else ""))
    return plan


def _passage_row(cfg: Config, plan: RunPlan, passages: list[Any], qtexts: list[str], dataset_reader: str,
                 released: Any, probe: _CacheProbe) -> None:
    """A vanilla-RAG row: the reader reads retriever.passage_top_k chunks of dataset.chunk_tokens."""
    from atomicrag.prompts import reader as reader_prompt
    from atomicrag.retrieve.reader_context import count_tokens

    reader_name = dataset_reader if cfg.reader.name == "dataset" else cfg.reader.name
    if reader_name == "none":
        return
    texts = _typical([p.text for p in passages], 1)
    chunk = texts[0] if texts else ""
    words = chunk.split()
    share = min(1.0, cfg.dataset.chunk_tokens / max(count_tokens(chunk), 1))
    chunk = " ".join(words[:max(1, int(len(words) * share))])
    context = [chunk] * cfg.retriever.passage_top_k

    def build(q: str, c: list[str]) -> list[dict[str, str]]:
        return reader_prompt.build_messages(reader_name, q, c, cfg.reader.reader_context, released)

    reqs = [ChatRequest(build(q, _fitted(lambda c, q=q: build(q, c), context, cfg, cfg.reader.max_tokens)), None,
                        max_tokens=cfg.reader.max_tokens) for q in qtexts]
    plan.stages.append(_stage("reader", reqs, cfg.reader.max_tokens, probe, calls=len(qtexts),
                              expected=ABSTRACT_READER_REPLY if reader_name == "abstract" else None,
                              note=f"{cfg.retriever.passage_top_k} passages of <= {cfg.dataset.chunk_tokens} tokens"))


def _judge_stage(cfg: Any, questions: list[Any], probe: _CacheProbe) -> StagePlan:
    """Graph-Bench answer accuracy: statements of the answer and of the reference, then one
    classification, per question (the judge's own LLM unless judge.llm_source=run)."""
    from atomicrag.prompts import judge as judge_prompt

    budget = cfg.judge.max_tokens
    reqs = []
    for q in questions:
        ref = " ".join(q.answers)
        reqs.append(ChatRequest(judge_prompt.build_statement_messages(q.question, ref), None, max_tokens=budget))
        reqs.append(ChatRequest(judge_prompt.build_statement_messages(q.question, ref), None, max_tokens=budget))
        reqs.append(ChatRequest(judge_prompt.build_classify_messages(q.question, [ref], [ref]), None,
                                max_tokens=budget))
    stage = _stage("judge", reqs, budget, probe, note="answer side sized as the reference")
    if cfg.judge.llm_source == "own":
        stage.price = prices(cfg.judge)
        stage.note += f"; judge llm {cfg.judge.llm.model}"
        stage.cached_calls = 0  # its own cache key, not probed
    return stage


def _reader_context(cfg: Config, passages: list[Any], atoms: list[str], kept: float) -> list[str]:
    """A context of the size the reader will read: the atom list (sieve's kept atoms, else the
    merged candidates up to sieve.max_context), or documents filled to reader.context_tokens."""
    n_atoms = max(1, round(min(kept, cfg.sieve.max_context)))
    if not cfg.reader.uses_documents(cfg.fidelity.preset):
        return _typical(atoms, n_atoms)
    from atomicrag.retrieve.reader_context import count_tokens

    docs = _typical([p.text for p in passages], 1)
    if not docs:
        return []
    words = docs[0].split()
    per_doc = min(count_tokens(docs[0]), cfg.reader.whole_doc_tokens)
    budget = cfg.reader.context_tokens
    # without a sieve the ranked documents fill the budget; with one, only the kept atoms' documents
    n_docs = n_atoms if cfg.sieve.name != "none" else budget // max(per_doc, 1) + 1
    limit = cfg.reader.document_limit(cfg.llm.reader_documents, cfg.llm.params_b)  # a small reader reads fewer
    n_docs = min(n_docs, limit) if limit else n_docs
    out, used = [], 0
    for _ in range(n_docs):
        take = min(per_doc, budget - used)
        if take <= 0:
            break
        # regex tokens to words: cut the typical document to its share of the budget
        n_words = max(1, int(len(words) * take / max(count_tokens(docs[0]), 1)))
        out.append(" ".join(words[:n_words]))
        used += take
    return out or [docs[0]]


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
