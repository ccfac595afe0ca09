"""Atomic Sieve (paper §3.4, Eqs. 9-10): an LLM keeps the candidate atoms a question needs.

Input per question: its query set (``[original] + sub-questions``) and, per query, the top-k
candidate ``ScoredAtom`` list. ``sieve.sieve_target`` (docs/fidelity.md) decides what
each prompt judges:

- ``original_question`` (paper): the candidates of all queries are merged (deduplicated by atom
  id, max score kept) and judged against the original question, one prompt per question;
- ``sub_query`` (released code): each query's candidates are judged against that query, one
  prompt per query, before any merging.

All prompts of all questions go to the backend in one ``chat()`` call. On a failed prompt
(backend error, or a reply that is not ``{"keep_indices": [...]}``) every candidate of that
prompt is kept and the failure is recorded. Out-of-range ids are dropped and counted.

``sieve.sieve_prompt=released`` (with ``fidelity.prompts=released``) sends the released
filter's prompt read from the checkout (``prompts/released_sieve.py``) as a free-text request
with the released budget, reads the reply the released way and keeps the atoms in the model's
order; a reply with no readable ``kept_fragment_ids`` section keeps every candidate, counted
as a failed prompt like any other fallback.

``sieve.timeout_s`` (the released filter's 60 s under ``reference_code``): a prompt whose reply has
not come that long after it was sent keeps every candidate in candidate order, as the released
filter does after its ``asyncio.wait_for``; it is counted as failed and as timed out, and its
failure is not cached (a later run asks again). The limit travels as ``ChatRequest.deadline_s``;
a backend that cannot honour it (in-process) is named in a warning, and its replies are waited for.
``NoSieve`` is the "w/o AS" ablation: it keeps every candidate.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, Protocol

from atomicrag.core.config import FidelityConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.llm.budget import context_window, fit_items
from atomicrag.llm.protocol import ChatRequest, request_deadline
from atomicrag.prompts import released as released_prompts
from atomicrag.prompts import released_sieve
from atomicrag.prompts import sieve as prompt

MODULE = "sieve"


@dataclass
class SieveDecision:
    """One sieve prompt: what was judged, against what, and what came back."""

    target: str  # the text the atoms were judged against
    query_index: int | None  # index in the query set; None = merged candidates vs the original
    candidate_ids: list[str] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)
    dropped_ids: list[str] = field(default_factory=list)
    invalid_indices: list[Any] = field(default_factory=list)  # ids the model returned outside 0..n-1
    # lowest-ranked candidates left out of the prompt to fit the model's window (not kept)
    trimmed_ids: list[str] = field(default_factory=list)
    failed: bool = False  # True: all candidates kept because the reply was unusable
    error: str | None = None
    timed_out: bool = False  # True: no reply within sieve.timeout_s (failed too)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SieveResult:
    """Per question. ``kept`` lists the kept atoms prompt by prompt, each in candidate order;
    under ``sub_query`` the same atom can appear once per query (merge deduplicates)."""

    kept: list[ScoredAtom]
    decisions: list[SieveDecision] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(d.failed for d in self.decisions)

    @property
    def n_invalid(self) -> int:
        return sum(len(d.invalid_indices) for d in self.decisions)

    def trace(self) -> list[dict[str, Any]]:
        """The ``QueryTrace.sieve`` entry."""
        return [d.to_dict() for d in self.decisions]


class Sieve(Protocol):
    name: str

    def sieve(self, questions: list[str], query_sets: list[list[str]],
              candidates: list[list[list[ScoredAtom]]]) -> list[SieveResult]: ...


def merge_candidates(per_query: list[list[ScoredAtom]]) -> list[ScoredAtom]:
    """Union of the queries' candidates (Eq. 10): one entry per atom id with its best score,
    ordered by that score (ties: first seen), so the prompt lists the strongest atoms first."""
    best: dict[str, ScoredAtom] = {}
    order: dict[str, int] = {}
    for atoms in per_query:
        for atom in atoms:
            if atom.atom_id not in best:
                order[atom.atom_id] = len(order)
                best[atom.atom_id] = atom
            elif atom.score > best[atom.atom_id].score:
                best[atom.atom_id] = atom
    return sorted(best.values(), key=lambda a: (-a.score, order[a.atom_id]))


def _check_shapes(questions: list[str], query_sets: list[list[str]],
                  candidates: list[list[list[ScoredAtom]]]) -> None:
    if not len(questions) == len(query_sets) == len(candidates):
        raise ValueError("questions, query_sets and candidates must have one entry per question")
    for i, (qs, cands) in enumerate(zip(query_sets, candidates, strict=True)):
        if len(qs) != len(cands):
            raise ValueError(f"question {i}: {len(qs)} queries but {len(cands)} candidate lists")


class _Job(NamedTuple):
    """One sieve prompt to build: question i's atoms judged against ``target``."""

    question_index: int
    target: str
    query_index: int | None
    atoms: list[ScoredAtom]


class LLMSieve:
    name = "llm"

    def __init__(self, llm: Any, cfg: SieveConfig, fidelity: FidelityConfig, *,
                 temperature: float = 0.0, max_tokens: int = SieveConfig.max_tokens, seed: int | None = 0) -> None:
        if cfg.sieve_target not in ("original_question", "sub_query"):
            raise ValueError(f"unknown sieve_target {cfg.sieve_target!r}")
        self.llm = llm
        self.cfg = cfg
        self.target = cfg.sieve_target
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        # the released filter (its prompt needs the checkout the released prompts come from)
        self.released: released_sieve.ReleasedSieve | None = None
        if cfg.sieve_prompt == "released" and fidelity.prompts == "released":
            root = released_prompts.require(fidelity.released_code).root
            self.released = released_sieve.load(root)
            self.max_tokens = self.released.max_tokens
        self.timeout_s = request_deadline(llm, "sieve.timeout_s", cfg.timeout_s)

    def _messages(self, target: str, texts: list[str]) -> list[dict[str, str]]:
        if self.released is not None:
            return self.released.messages(target, texts)
        return prompt.build_messages(target, texts)

    def _jobs(self, i: int, question: str, queries: list[str],
              cands: list[list[ScoredAtom]]) -> list[_Job]:
        if self.target == "original_question":
            return [_Job(i, question, None, merge_candidates(cands))]
        return [_Job(i, query, j, list(atoms))
                for j, (query, atoms) in enumerate(zip(queries, cands, strict=True))]

    def sieve(self, questions: list[str], query_sets: list[list[str]],
              candidates: list[list[list[ScoredAtom]]]) -> list[SieveResult]:
        _check_shapes(questions, query_sets, candidates)
        jobs = [job for i, (q, qs, c) in enumerate(zip(questions, query_sets, candidates, strict=True))
                for job in self._jobs(i, q, qs, c)]
        jobs = self._fit(jobs)
        # Prompts with no candidate need no call: there is nothing to keep.
        asked = [job for job in jobs if job.atoms]
        requests = [
            ChatRequest(messages=self._messages(job.target, [a.text for a in job.atoms]),
                        schema=None if self.released else prompt.SCHEMA, temperature=self.temperature,
                        max_tokens=self.max_tokens, seed=self.seed, module=MODULE, deadline_s=self.timeout_s)
            for job in asked
        ]
        replies = self.llm.chat(requests) if requests else []
        if len(replies) != len(requests):
            raise RuntimeError(f"LLM returned {len(replies)} results for {len(requests)} requests")
        reply_of = {id(job): reply for job, reply in zip(asked, replies, strict=True)}

        results = [SieveResult(kept=[]) for _ in questions]
        for job in jobs:
            decision, kept = _decide(job, reply_of.get(id(job)), released=self.released is not None)
            decision.trimmed_ids = [a.atom_id for a in self._trimmed.get(id(job), [])]
            results[job.question_index].decisions.append(decision)
            results[job.question_index].kept.extend(kept)
        return results


    def _fit(self, jobs: list[_Job]) -> list[_Job]:
        """Cut each prompt's lowest-ranked candidates that do not fit the model's window."""
        window = context_window(self.llm)
        self._trimmed: dict[int, list[ScoredAtom]] = {}
        fitted = []
        for job in jobs:
            keep, _ = fit_items(lambda atoms, t=job.target: self._messages(t, [a.text for a in atoms]),
                                job.atoms, window, self.max_tokens)
            new = job._replace(atoms=keep)
            if len(keep) < len(job.atoms):
                self._trimmed[id(new)] = job.atoms[len(keep):]
            fitted.append(new)
        return fitted


def _decide(job: _Job, reply: Any, released: bool = False) -> tuple[SieveDecision, list[ScoredAtom]]:
    atoms = job.atoms
    decision = SieveDecision(target=job.target, query_index=job.query_index,
                             candidate_ids=[a.atom_id for a in atoms])
    if reply is None:  # no candidates, no call
        return decision, []
    decision.prompt_tokens = int(reply.prompt_tokens or 0)
    decision.completion_tokens = int(reply.completion_tokens or 0)
    if reply.error is not None:
        keep = list(range(len(atoms)))
        decision.failed, decision.error = True, str(reply.error)
        decision.timed_out = bool(getattr(reply, "timed_out", False))
    elif released:  # the released reading: the model's order, keep-all fallback (counted)
        read = released_sieve.parse_reply(reply.text, len(atoms))
        keep, decision.invalid_indices = read.keep, read.invalid
        if read.fallback is not None:
            decision.failed, decision.error = True, read.fallback
        kept = [atoms[n] for n in keep]
        keep_set = set(keep)
        decision.kept_ids = [a.atom_id for a in kept]
        decision.dropped_ids = [a.atom_id for n, a in enumerate(atoms) if n not in keep_set]
        return decision, kept
    else:
        try:
            keep, decision.invalid_indices = prompt.parse_keep_indices(reply.parsed, len(atoms))
        except (TypeError, ValueError) as exc:
            keep = list(range(len(atoms)))
            decision.failed, decision.error = True, f"unreadable reply: {exc}"
    keep_set = set(keep)
    kept = [a for n, a in enumerate(atoms) if n in keep_set]
    decision.kept_ids = [a.atom_id for a in kept]
    decision.dropped_ids = [a.atom_id for n, a in enumerate(atoms) if n not in keep_set]
    return decision, kept


class NoSieve:
    """The "w/o AS" ablation: every candidate of every query is kept (merge deduplicates)."""

    name = "none"

    def __init__(self, **_: Any) -> None:  # the registry's builder signature; nothing to configure
        pass

    def sieve(self, questions: list[str], query_sets: list[list[str]],
              candidates: list[list[list[ScoredAtom]]]) -> list[SieveResult]:
        _check_shapes(questions, query_sets, candidates)
        return [SieveResult(kept=[a for atoms in cands for a in atoms]) for cands in candidates]


def build_sieve(cfg: SieveConfig, fidelity: FidelityConfig, llm: Any = None,
                **kwargs: Any) -> LLMSieve | NoSieve:
    """The ``registry.SIEVES`` entry ``sieve.name``; ``kwargs``: sampling (temperature, ...)."""
    from atomicrag.core.registry import SIEVES

    return SIEVES.build(cfg.name, cfg=cfg, llm=llm, fidelity=fidelity, **kwargs)


def sieve_summary(results: list[SieveResult]) -> dict[str, Any]:
    """metrics.json's ``sieve``: prompts, failures, candidates and what the sieve kept."""
    decisions = [d for r in results for d in r.decisions]
    asked = [d for d in decisions if d.candidate_ids]
    n_cand = sum(len(d.candidate_ids) for d in asked)
    return {
        "prompts": len(asked),
        "failed_prompts": sum(d.failed for d in asked),
        "timed_out_prompts": sum(d.timed_out for d in asked),  # of the failed: no reply within sieve.timeout_s
        "questions_with_failure": sum(r.failed for r in results),
        "invalid_indices": sum(len(d.invalid_indices) for d in asked),
        "candidates": n_cand,
        "kept": sum(len(d.kept_ids) for d in asked),
        "keep_rate": (sum(len(d.kept_ids) for d in asked) / n_cand) if n_cand else 0.0,
    }
