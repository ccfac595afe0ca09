"""What a run does differently from the released pipeline, named beside its numbers.

``differences(cfg)`` lists, for metrics.json, every way a run's setup departs from the released
code that produced the published numbers: the prompt source, each fidelity switch off its
released value, the corpus chunks, the question split, completion budgets, the models (generator,
embedder, judge). ``prompt_source(cfg)`` records where the prompts came from and a hash of each
released template. ``make_tables`` prints them as a footnote per table (``footnote``), and marks
every cell of a run with the project's own prompts "own prompts".
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Any

from atomicrag.core.compose import HARNESS_ROOT, load_config
from atomicrag.core.config import Config, FidelityConfig
from atomicrag.core.config_moves import MOVED_FIELDS

# the released code's completion budgets: its run script passes max_new_tokens=None, so no call
# is capped (the server's own limit applies) except the sieve's 1024
RELEASED_BUDGET = "none (no cap sent)"
RELEASED_SIEVE_BUDGET = 1024
RELEASED_MODELS = {"llm": "gpt-4o-mini", "embedder": "BAAI/bge-large-en-v1.5"}
RELEASED_CONCURRENCY = 200  # the released BaseConfig.max_concurrency default
OWN_PROMPTS = "own prompts"


def prompt_source(cfg: Config) -> dict[str, Any]:
    """``{"source": own | released, "checkout", "hashes"}`` (hashes of the released templates used)."""
    from atomicrag.engine.api import for_fidelity

    released = for_fidelity(cfg.fidelity)
    if released is None:
        return {"source": "own", "checkout": None, "hashes": {}}
    out: dict[str, Any] = {"source": "released", "checkout": released.root, "hashes": released.hashes()}
    if cfg.sieve.sieve_prompt == "released":
        from atomicrag.engine.api import load_released_sieve as load_sieve

        sieve = load_sieve(released.root)
        out["hashes"]["sieve"] = hashlib.sha256(json.dumps(sieve.texts()).encode()).hexdigest()[:16]
    else:
        out["own_wording_kept"] = ["sieve"]
    return out


# the released asyncio.wait_for per sieve task (fragment_filter.filter_fragments_batch_async) and per
# reader and query-NER task (atomicrag.py)
RELEASED_TASK_TIMEOUT_S = 60.0
# LLM backends that generate in this process: no request deadline can cut them short
IN_PROCESS_LLMS = frozenset({"fake", "transformers"})


def _item(topic: str, ours: Any, released: Any) -> dict[str, Any]:
    return {"topic": topic, "ours": ours, "released": released}


# topics about what an LLM is asked or how its replies are read: they say nothing of a run that made
# no LLM call (retrieval-only rows), and a table's footnote must not list them against its rows
LLM_TOPICS = frozenset({
    "prompts", "sieve prompt", "sieve timeout", "reader timeout", "query NER timeout", "seed", "structured output and retries", "judge statement repair",
    "fragment-entity alignment", "generator", "LLM concurrency", "judge LLM",
})


def differences(cfg: Config, uses_llm: bool = True) -> list[dict[str, Any]]:
    """Every departure of ``cfg`` from the released pipeline, as ``{"topic", "ours", "released"}``;
    ``uses_llm=False`` (the run made no LLM call) leaves out the ``LLM_TOPICS`` and LLM budgets."""
    out = _differences(cfg)
    return out if uses_llm else without_llm_topics(out)


def without_llm_topics(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``diffs`` less what only matters where an LLM was asked (``LLM_TOPICS``, completion budgets)."""
    return [d for d in diffs if str(d.get("topic")) not in LLM_TOPICS and not str(d.get("topic")).startswith("budget: ")]


def _differences(cfg: Config) -> list[dict[str, Any]]:
    from atomicrag.engine.api import released_code_covers

    out: list[dict[str, Any]] = []
    if cfg.fidelity.prompts == "own":
        out.append(_item("prompts", "this project's own wording (fidelity.prompts=own)", "released templates"))
        if cfg.embedder.embed_instruction == "released":
            out.append(_item("embedding instructions", "the embedder's own query prefix (fidelity.prompts=own)",
                             "the released linking instructions"))
    if cfg.sieve.name != "none" and (cfg.sieve.sieve_prompt != "released" or cfg.fidelity.prompts == "own"):
        out.append(_item("sieve prompt", "this project's own wording, JSON schema, ids in candidate order "
                         f"(sieve.sieve_prompt={cfg.sieve.sieve_prompt}, fidelity.prompts={cfg.fidelity.prompts})",
                         "released filter prompt, free-text section, the model's order"))
    out.extend(_sieve_timeout(cfg))
    out.extend(_stage_differences(cfg))
    ref = released_config()
    for section, name in switches():
        if (section, name) in (("fidelity", "preset"), ("fidelity", "prompts"), ("fidelity", "released_code")):
            continue
        mine, released = getattr(getattr(cfg, section), name), getattr(getattr(ref, section), name)
        if mine != released:
            out.append(_item(f"{section}.{name}", mine, released))
    out.extend(_corpus_items(cfg))
    if cfg.dataset.split != "all" or cfg.dataset.limit:
        limit = f", first {cfg.dataset.limit} questions" if cfg.dataset.limit else ""
        out.append(_item("questions", f"split {cfg.dataset.split}{limit}", "the full question set"))
    for topic, ours, theirs in (
        ("budget: reader max_tokens", cfg.reader.max_tokens, RELEASED_BUDGET),
        ("budget: decomposition max_tokens", cfg.decompose.max_tokens or cfg.llm.max_tokens, RELEASED_BUDGET),
    ):
        if cfg.fidelity.budgets != "released":  # released: no cap sent (fidelity.budgets)
            out.append(_item(topic, ours, theirs))

    released_sieve = cfg.sieve.sieve_prompt == "released" and cfg.fidelity.prompts == "released"
    if cfg.sieve.max_tokens != RELEASED_SIEVE_BUDGET and cfg.sieve.name != "none" and not released_sieve:
        out.append(_item("budget: sieve max_tokens", cfg.sieve.max_tokens, RELEASED_SIEVE_BUDGET))
    capped = cfg.fidelity.budgets != "released"
    if capped and cfg.retriever.query_entities == "llm":
        out.append(_item("budget: query NER max_tokens", cfg.retriever.query_ner_max_tokens, RELEASED_BUDGET))
    if capped and cfg.atomizer.name == "llm":  # the llm atomizer's two calls
        for call, budget in (("passage NER", cfg.atomizer.ner_max_tokens),
                             ("extraction", cfg.atomizer.extraction_max_tokens)):
            out.append(_item(f"budget: {call} max_tokens", budget, RELEASED_BUDGET))
    if cfg.llm.model != RELEASED_MODELS["llm"]:
        out.append(_item("generator", cfg.llm.model, RELEASED_MODELS["llm"]))
    if cfg.embedder.model != RELEASED_MODELS["embedder"]:
        covered = "released BGE class" if released_code_covers(cfg.embedder) else "its model card's recipe"
        out.append(_item("embedder", f"{cfg.embedder.model} ({covered})", RELEASED_MODELS["embedder"]))
    if cfg.embedder.precision != "fp32" and cfg.embedder.embed_precision != "fp32":  # released: stored dtype
        out.append(_item("embedding precision", f"embedder.precision={cfg.embedder.precision} (auto: fp16 on "
                         "CUDA, bf16 on CPUs with native bf16; similarities move in the third decimal)",
                         "the model's stored dtype (float32 for bge-large-en-v1.5)"))
    if cfg.llm.concurrency != RELEASED_CONCURRENCY:
        out.append(_item("LLM concurrency", f"llm.concurrency={cfg.llm.concurrency} (moves latency, not answers)",
                         RELEASED_CONCURRENCY))
    if cfg.judge.name != "none":
        if cfg.judge.llm_source == "run" or cfg.judge.llm.model != RELEASED_MODELS["llm"]:
            judge_llm = cfg.llm.model if cfg.judge.llm_source == "run" else cfg.judge.llm.model
            out.append(_item("judge LLM", judge_llm, "gpt-4o-mini (temperature 0, seed 42)"))
        judge_emb = cfg.embedder if cfg.judge.embedder_source == "run" else cfg.judge.embedder
        if judge_emb.model != RELEASED_MODELS["embedder"]:
            out.append(_item("judge embedder", judge_emb.model, "bge-large through LangChain (CLS pooling)"))
    return out


def _sieve_timeout(cfg: Config) -> list[dict[str, Any]]:
    if cfg.sieve.name == "none":
        return []
    return _timeout_item(cfg, "sieve timeout", "sieve", "sieve.timeout_s", cfg.sieve.timeout_s,
                         f"{RELEASED_TASK_TIMEOUT_S:g} s per sieve task, after which every candidate is kept",
                         "every candidate is kept (counted)")


def _timeout_item(cfg: Config, topic: str, stage: str, field: str, limit: float | None, released: str,
                  after: str) -> list[dict[str, Any]]:
    """A stage's per-request limit (its switch ``field``) where it is not the released 60 s, or
    where the run's backend cannot honour it (an in-process model is waited for whatever the limit)."""
    limit = limit or 0
    if limit and cfg.llm.name in IN_PROCESS_LLMS:
        return [_item(topic, f"{field}={limit:g} is not honoured by the in-process "
                      f"{cfg.llm.name} backend: the {stage} waits for its reply", released)]
    if limit == RELEASED_TASK_TIMEOUT_S:
        return []
    ours = (f"{field}={limit:g} s per {stage} request, after which {after}" if limit
            else f"none ({field}=0): the {stage} waits for its reply (llm.timeout_s bounds each "
            "request, a failed request is counted)")
    return [_item(topic, ours, released)]


def switches() -> list[tuple[str, str]]:
    """``(section, field)`` of every fidelity switch: the shared ones of ``fidelity``, then each
    stage's released behaviours in its own section (``MOVED_FIELDS``)."""
    return ([("fidelity", f.name) for f in dataclasses.fields(FidelityConfig)]
            + [(section, name) for (_, name), section in MOVED_FIELDS.items()])


@functools.lru_cache(maxsize=1)
def released_config() -> Config:
    """The harness's config under ``fidelity=reference_code`` and no whole-system preset: every
    switch at its released value (the judge's too: only the harness's root has a judge section)."""
    return load_config({"fidelity": "reference_code"}, env_prefix=None, root=HARNESS_ROOT, overrides=["~preset"])


def _stage_differences(cfg: Config) -> list[dict[str, Any]]:
    """How LLM stages and graph keys still differ from the released code where no switch covers
    them (each with what the released code does)."""
    out: list[dict[str, Any]] = []
    fid = cfg.fidelity
    if cfg.llm.seed is not None and fid.request_seed == "sent":
        out.append(_item("seed", f"seed {cfg.llm.seed} sent with every request (llm.seed; "
                         "fidelity.request_seed=none or llm.seed=null sends none)", "no seed sent"))
    stages: list[str] = []  # where a JSON schema is sent and an unreadable reply re-asked
    if cfg.llm.structured_output:
        stages += [] if fid.extraction_replies == "released" else (
            ["passage NER", "extraction"] + (["query NER"] if cfg.retriever.query_entities == "llm" else []))
        stages += [] if cfg.decompose.decompose_parse == "released" else ["decomposition"]
        stages += [] if cfg.sieve.sieve_prompt == "released" and fid.prompts == "released" else ["sieve"]
        stages += [] if cfg.judge.judge_replies == "released" else ["judge"]
    if stages:
        out.append(_item("structured output and retries",
                         f"JSON schemas (guided decoding) at {', '.join(stages)}; an unreadable reply retried "
                         "at temperature 0.3 with a new seed (the atomizer re-asks at 0.7), failures counted",
                         "free text read by the released parsers, an empty result on a parse failure, no retries"))
    if cfg.judge.judge_replies == "released" and cfg.judge.name != "none":
        out.append(_item("judge statement repair", "json, then this project's JSON repair",
                         "json, json5, json_repair"))
    if cfg.graph.entity_keys == "unicode":
        out.append(_item("entity keys", "Unicode-aware (non-alphanumerics -> space, spaces collapsed); a name "
                         "with no letter or digit gets no node (graph.entity_keys=ascii: as released)",
                         "ASCII-only ([^A-Za-z0-9 ] -> space, stripped, inner spaces kept); every name with no "
                         "ASCII letter or digit falls on one empty-key node"))
    if cfg.graph.synonym_candidates != "source_only" or cfg.graph.synonym_min_alnum != 4:
        out.append(_item("synonym candidates", f"both ends need at least graph.synonym_min_alnum="
                         f"{cfg.graph.synonym_min_alnum} alphanumerics" if cfg.graph.synonym_candidates == "both_ends" else
                         f"the searching entity needs graph.synonym_min_alnum={cfg.graph.synonym_min_alnum} "
                         "alphanumerics, its neighbours a non-empty key",
                         "only the searching entity needs more than 3 ASCII alphanumerics, its neighbours may be short"))
    if cfg.graph.synonym_overwrites_relevance and cfg.graph.synonym_direction != "directed":
        out.append(_item("synonym over relevance", "a pair's relevance edge is replaced as a whole "
                         "(graph.synonym_direction=directed: one direction at a time, as released)",
                         "each direction is written on its own, so the reverse relevance entry is kept"))
    if fid.extraction_replies != "released":
        out.append(_item("fragment-entity alignment", "a misaligned reply is repaired from the atom texts "
                         "(fidelity.extraction_replies=released: positional, as released)",
                         "positional: the entity lists truncated or padded to the fragments"))
    if fid.empty_replies != "accepted":
        out.append(_item("empty replies", "an empty free-text reply is re-asked warmer with a new seed, then "
                         "counted as failed (fidelity.empty_replies=accepted: as released)",
                         'taken as the reply ("") and read by the stage\'s parser'))
    if cfg.reader.merge == "string_dedupe" and cfg.reader.context_order != "sieve":
        out.append(_item("reader context order", "an undecomposed question's kept atoms by PPR score "
                         "(reader.context_order=sieve: as released)", "in the order the sieve reply listed them"))
    # no switch: not measured on a published slice (the scripted parity slices never overflow a window)
    if cfg.sieve.name != "none":
        out.append(_item("sieve window", "candidates that overflow the model's window are trimmed "
                         "before the request is sent", "all candidates are sent; an overflowing request fails "
                         "and every candidate is kept"))
    if cfg.reader.name != "none":
        out.extend(_timeout_item(cfg, "reader timeout", "reader", "reader.timeout_s", cfg.reader.timeout_s,
                                 "60 s per question, after which the answer is \"\"",
                                 "the answer is \"\" (counted as failed)"))
    if cfg.retriever.query_entities == "llm":
        out.extend(_timeout_item(cfg, "query NER timeout", "query NER", "retriever.query_ner_timeout_s",
                                 cfg.retriever.query_ner_timeout_s,
                                 "60 s per question, after which the question has no entities",
                                 "the query has no entities (atom seeds only; counted in its errors)"))
    # no switch: found by a scripted parity run whose two fragments had the same tokens for an
    # uncased embedder and the same entities (exactly equal PPR scores); real corpora rarely tie
    out.append(_item("PPR score ties", "atoms with exactly equal scores come in torch.topk's order",
                     "in the order numpy's argsort (quicksort) gives them over its fragment list, reversed"))
    if cfg.atomizer.name == "llm":
        out.append(_item("failed chunks", "a chunk whose request failed is counted as failed and asked "
                         "again on the next run (its result is not cached)",
                         "an empty result for the chunk (no re-asking), counted in its OpenIE statistics"))
    return out


def footnote(diffs_by_run: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Lines of a table's footnote: each difference once, with the runs (row labels) it applies to."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for label, diffs in diffs_by_run.items():
        for d in diffs:
            key = (str(d.get("topic")), str(d.get("ours")), str(d.get("released")))
            seen.setdefault(key, [])
            if label not in seen[key]:
                seen[key].append(label)
    every = set(diffs_by_run)
    lines = []
    for (topic, ours, theirs), labels in seen.items():
        where = "all rows" if set(labels) == every else ", ".join(labels)
        lines.append(f"{topic}: {ours} (released: {theirs}) — {where}")
    return lines


# datasets whose corpus.jsonl IS the authors' chunk file (each chunk within one 256-token window)
AUTHORS_CHUNK_CORPORA = ("graphbench_medical", "graphbench_novel")


def _corpus_items(cfg: Config) -> list[dict[str, Any]]:
    """What the row indexed, where it is not what the released runner indexed."""
    d = cfg.dataset
    out: list[dict[str, Any]] = []
    if d.corpus_file:
        pass  # an explicit authors' chunk file (2Wiki: corpus_atomicrag_chunks.jsonl)
    elif d.name in AUTHORS_CHUNK_CORPORA:
        if d.chunk_tokens < 256:
            out.append(_item("corpus chunks", f"the authors' chunks cut into {d.chunk_tokens}-token windows",
                             "the authors' chunk file, each chunk whole"))
    else:
        out.append(_item("corpus chunks", f"the dataset's passages (corpus.jsonl) in {d.chunk_tokens}-token windows",
                         "the authors' chunk file"))
    if not d.index_prefix:
        out.append(_item("corpus chunk prefix", "chunk text as given", 'each chunk prefixed "{idx}:" by the runner'))
    return out
