"""Atomic Question Decomposition (paper §3.2, Eq. 4).

``LLMDecomposer`` sends one request per question, all questions in one ``chat()`` batch. The
effective query set is the question itself plus, when the trigger fires, at most
``DecomposeConfig.max_sub_questions`` sub-questions. The trigger follows
``decompose.decompose_trigger`` (docs/fidelity.md):

- ``score``: complexity_score >= threshold (paper Eq. 4);
- ``score_and_flag``: score >= threshold AND the model's needs_decomposition AND at least one
  sub-question (released code). The prompt then asks for the flag on criteria of its own (the
  released prompt's), not as a restatement of the score, so the conjunction can bite.

A failed call (backend error or an unreadable reply) never aborts the run: the question is
answered undecomposed and ``Decomposition.failed`` records it, so failure rates are reported.
``NoDecomposer`` is the "w/o AQD" ablation.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from atomicrag.core.config import DecomposeConfig, FidelityConfig, LLMConfig
from atomicrag.llm.protocol import ChatRequest
from atomicrag.prompts import decompose as prompt
from atomicrag.prompts.released import for_fidelity

MODULE = "decompose"


@dataclass
class Decomposition:
    question: str
    queries: list[str]  # the effective query set: [question] + sub-questions used
    sub_questions: list[dict[str, Any]] = field(default_factory=list)  # {"id","question","focus"} used
    decomposed: bool = False  # True when queries holds sub-questions
    triggered: bool = False  # the trigger rule fired (it may fire with no usable sub-question)
    complexity_score: float | None = None
    needs_decomposition: bool | None = None
    reasoning: str = ""
    proposed: int = 0  # usable sub-questions the model wrote, before the cap
    failed: bool = False
    error: str | None = None
    cut_at: int | None = None  # the reply was cut at this max_tokens (our budget): reported, not a failure
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def sub_question_texts(self) -> list[str]:
        return self.queries[1:]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trigger_fires(score: float, needs: bool, n_sub_questions: int, *, threshold: float,
                  rule: str) -> bool:
    """The decomposition trigger of ``decompose.decompose_trigger`` (see module docstring)."""
    if rule == "score":
        return score >= threshold
    if rule == "score_and_flag":
        return score >= threshold and needs and n_sub_questions >= 1
    raise ValueError(f"unknown decompose_trigger {rule!r}")


def _dedupe_sub_questions(question: str, subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A sub-question identical to the question or to an earlier one adds a query that
    # retrieves exactly the same atoms: it costs a propagation and exposes nothing new.
    seen = {question.strip().casefold()}
    out = []
    for sub in subs:
        key = sub["question"].casefold()
        if key not in seen:
            seen.add(key)
            out.append(sub)
    return out


class LLMDecomposer:
    name = "llm"

    def __init__(self, llm: Any, cfg: DecomposeConfig, fidelity: FidelityConfig, *,
                 temperature: float = 0.0, max_tokens: int = LLMConfig.max_tokens, seed: int | None = 0) -> None:
        self.llm = llm
        self.cfg = cfg
        self.rule = cfg.decompose_trigger
        self.released = for_fidelity(fidelity)  # fidelity.prompts=released: the released template
        # released: a free-text reply read with the released fallbacks, sub-questions capped first,
        # empty and repeated ones kept; own: a JSON schema, empty/repeated ones dropped, then capped
        self.parse_mode = cfg.decompose_parse
        self.temperature = temperature
        self.max_tokens: int | None = max_tokens
        if fidelity.budgets == "released":  # no cap sent, as released
            self.max_tokens = None
        self.seed = seed
        trigger_fires(0.0, False, 0, threshold=cfg.complexity_threshold, rule=self.rule)  # validate

    def requests(self, questions: list[str]) -> list[ChatRequest]:
        return [
            ChatRequest(
                messages=prompt.build_messages(q, max_sub_questions=self.cfg.max_sub_questions,
                                               threshold=self.cfg.complexity_threshold, trigger=self.rule,
                                               released=self.released),
                schema=None if self.parse_mode == "released" else prompt.SCHEMA,
                temperature=self.temperature, max_tokens=self.max_tokens,
                seed=self.seed, module=MODULE,
            )
            for q in questions
        ]

    def decompose(self, questions: list[str]) -> list[Decomposition]:
        if not questions:
            return []
        results = self.llm.chat(self.requests(questions))
        if len(results) != len(questions):
            raise RuntimeError(f"LLM returned {len(results)} results for {len(questions)} requests")
        return [self._one(q, r) for q, r in zip(questions, results, strict=True)]

    def _one(self, question: str, result: Any) -> Decomposition:
        out = Decomposition(question=question, queries=[question],
                            prompt_tokens=int(result.prompt_tokens or 0),
                            completion_tokens=int(result.completion_tokens or 0))
        if result.error is not None and getattr(result, "finish_reason", None) == "length":
            # cut by the completion budget: the question keeps only itself as its query, as after an
            # unreadable reply, but the cause is the budget the config chose, reported as such
            out.cut_at, out.error = self.max_tokens, str(result.error)
            return out
        if result.error is not None:
            out.failed, out.error = True, str(result.error)
            return out
        try:
            if self.parse_mode == "released":
                needs, score, reasoning, subs = prompt.parse_reply_released(result.text or "",
                                                                            self.cfg.max_sub_questions)
            else:
                needs, score, reasoning, subs = prompt.parse_reply(result.parsed)
        except (TypeError, ValueError, AttributeError) as exc:
            # released: the question stays undecomposed, as there; counted here
            out.failed, out.error = True, f"unreadable reply: {exc}"
            return out
        if self.parse_mode != "released":
            subs = _dedupe_sub_questions(question, subs)
        out.needs_decomposition, out.complexity_score, out.reasoning = needs, score, reasoning
        out.proposed = len(subs)
        out.triggered = trigger_fires(score, needs, len(subs), threshold=self.cfg.complexity_threshold,
                                      rule=self.rule)
        if out.triggered and subs:
            out.sub_questions = subs[: self.cfg.max_sub_questions]
            out.queries = [question] + [s["question"] for s in out.sub_questions]
            out.decomposed = True
        return out


class NoDecomposer:
    """The "w/o AQD" ablation: every question is its own and only query."""

    name = "none"

    def __init__(self, **_: Any) -> None:  # the registry's builder signature; nothing to configure
        pass

    def decompose(self, questions: list[str]) -> list[Decomposition]:
        return [Decomposition(question=q, queries=[q]) for q in questions]


def build_decomposer(cfg: DecomposeConfig, fidelity: FidelityConfig, llm: Any = None,
                     **kwargs: Any) -> LLMDecomposer | NoDecomposer:
    """The ``registry.DECOMPOSERS`` entry ``decompose.name``; ``kwargs``: sampling (temperature, ...)."""
    from atomicrag.core.registry import DECOMPOSERS

    return DECOMPOSERS.build(cfg.name, cfg=cfg, llm=llm, fidelity=fidelity, **kwargs)


def decompose_summary(decompositions: list[Decomposition]) -> dict[str, Any]:
    """metrics.json's ``decompose``: questions decomposed, failed, cut or capped (failures are
    reported, never hidden)."""
    n = len(decompositions)
    decomposed = [d for d in decompositions if d.decomposed]
    return {
        "n": n,
        "decomposed": len(decomposed),
        "triggered_without_sub_questions": sum(d.triggered and not d.decomposed for d in decompositions),
        "failed": sum(d.failed for d in decompositions),
        "cut_by_budget": sum(d.cut_at is not None for d in decompositions),
        "mean_sub_questions": (sum(len(d.sub_questions) for d in decomposed) / len(decomposed)
                               if decomposed else 0.0),
        "capped": sum(d.proposed > len(d.sub_questions) for d in decomposed),
    }
