"""The query stages' estimate for the run plan (``harness/plan.py``): the requests query NER,
decomposition and the sieve send, made without an index (a sieve prompt holds candidates of the
corpus's typical length)."""
from __future__ import annotations

from typing import Any

from atomicrag.atomize.estimate import ner_schema
from atomicrag.llm.budget import fitted_prefix, sent_cap
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.sampling import request_seed
from atomicrag.prompts import decompose as decompose_prompt
from atomicrag.prompts import ner as ner_prompt
from atomicrag.prompts import sieve as sieve_prompt


def typical(texts: list[str], n: int) -> list[str]:
    """``n`` texts of the corpus's mean length (the candidates a prompt holds, in length)."""
    if not texts or n <= 0:
        return []
    mean = sum(len(t) for t in texts) / len(texts)
    best = min(texts, key=lambda t: abs(len(t) - mean))
    return [best] * n


def query_ner_requests(cfg: Any, questions: list[str], released: Any) -> list[ChatRequest]:
    """One NER request per question, as ``retriever.query_entities=llm`` sends it."""
    seed = request_seed(cfg.llm.seed, cfg.fidelity)
    return [ChatRequest(ner_prompt.build_messages(q, released=released), ner_schema(cfg.fidelity),
                        max_tokens=sent_cap(cfg.fidelity, cfg.retriever.query_ner_max_tokens), seed=seed)
            for q in questions]


def decompose_requests(cfg: Any, questions: list[str], released: Any) -> tuple[list[ChatRequest], int]:
    """(one decomposition request per question, the completion budget of one)."""
    budget = cfg.decompose.max_tokens or cfg.llm.max_tokens
    schema = None if cfg.decompose.decompose_parse == "released" else decompose_prompt.SCHEMA
    reqs = [ChatRequest(decompose_prompt.build_messages(
        q, max_sub_questions=cfg.decompose.max_sub_questions, threshold=cfg.decompose.complexity_threshold,
        trigger=cfg.decompose.decompose_trigger, released=released),
        schema, max_tokens=budget, seed=request_seed(cfg.llm.seed, cfg.fidelity)) for q in questions]
    return reqs, budget


def sieve_requests(cfg: Any, questions: list[str], atoms: list[str], n_candidates: int,
                   released: Any) -> tuple[list[ChatRequest], int]:
    """(one sieve request per question holding ``n_candidates`` typical atoms, cut to the window
    as the sieve cuts them, the completion budget of one); the released sieve's own prompt and
    budget under ``sieve.sieve_prompt=released``."""
    cands = typical(atoms, n_candidates)
    if cfg.sieve.sieve_prompt == "released" and released is not None:
        from atomicrag.prompts import released_sieve

        rs = released_sieve.load(released.root)
        build, out_budget = rs.messages, rs.max_tokens
    else:
        build, out_budget = sieve_prompt.build_messages, cfg.sieve.max_tokens
    reqs = [ChatRequest(build(q, fitted_prefix(lambda c, q=q: build(q, c), cands, cfg.llm, out_budget)), None,
                        max_tokens=out_budget) for q in questions]
    return reqs, out_budget
