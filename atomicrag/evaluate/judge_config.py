"""The judge of a run, built from ``cfg.judge``: its own LLM and embedder, not the run's.

The released evaluation grades every backbone with the same judge: gpt-4o-mini (temperature 0,
seed 42) for the statement split and TP/FP/FN classification, and bge-large for the semantic
similarity, embedded through LangChain's ``aembed_query`` (bge's query instruction, CLS pooling).
``JudgeConfig`` defaults to that judge. Grading a run with its own LLM (Table 10's backbones
grading themselves) or its own embedder (Table 8's embedders grading themselves) happens only
when the config says so: ``judge.llm_source=run`` / ``judge.embedder_source=run``.

The judge's embedder is ``judge.embedder``, whose released-code switches stay at the model's own
recipe: the released code mean-pools bge for *retrieval* (``embedder.embed_pooling``, switch #10),
but its judge goes through LangChain, which uses CLS pooling. The judge's own released behaviours
(``judge.acc_weight``, ``acc_similarity``, ``judge_failures``, ``judge_replies``) live in its
section, which only the harness's config has (``HarnessConfig.judge``).
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.config import Config  # the harness passes its HarnessConfig (it has the judge section)
from atomicrag.core.registry import JUDGES
from atomicrag.evaluate.judge import AnswerAccuracyJudge, build_judge


class _QueryEncoder:
    """Wraps an embedder so ``encode(texts)`` embeds as queries (``aembed_query`` semantics)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.name = f"{getattr(embedder, 'name', 'embedder')}+query"
        self.dim = getattr(embedder, "dim", None)

    def encode(self, texts: list[str], **_: Any) -> Any:
        return self.embedder.encode(texts, is_query=True)


def judge_llm(cfg: Config, run_llm: Any, accountant: Any = None) -> tuple[Any, bool]:
    """(the judge's LLM, whether the judge owns it and must close it)."""
    if cfg.judge.llm_source == "run":
        if run_llm is None:
            raise ValueError("judge.llm_source=run but the run has no LLM (llm=...)")
        return run_llm, False
    from atomicrag.llm.factory import build_llm

    return build_llm(cfg.judge.llm, cfg.paths, accountant,
                     accept_empty=cfg.fidelity.empty_replies == "accepted"), True


def judge_embedder(cfg: Config, run_embedder: Any) -> Any:
    if cfg.judge.embedder_source == "run":
        if run_embedder is None:
            raise ValueError("judge.embedder_source=run but the run has no embedder")
        base = run_embedder
    else:
        from atomicrag.embed.factory import build_embedder

        base = build_embedder(cfg.judge.embedder, None)  # its own recipe: see the module docstring
    return _QueryEncoder(base) if cfg.judge.embed_as_query else base


class OwnedJudge:
    """An ``AnswerAccuracyJudge`` plus the LLM it opened (closed by ``close()``)."""

    def __init__(self, judge: AnswerAccuracyJudge, llm: Any, owns_llm: bool, settings: dict[str, Any]) -> None:
        self.judge_impl, self.llm, self.owns_llm = judge, llm, owns_llm
        self.settings = settings  # what graded the run, for metrics.json

    def judge(self, *args: Any, **kwargs: Any) -> Any:
        return self.judge_impl.judge(*args, **kwargs)

    def close(self) -> None:
        if self.owns_llm and self.llm is not None:
            self.llm.close()
            self.llm = None


def judge_from_config(cfg: Config, run_llm: Any, run_embedder: Any, accountant: Any = None) -> OwnedJudge | None:
    """The judge ``cfg.judge`` describes (built by its ``registry.JUDGES`` entry, with the models
    the entry declares it needs), or None for an entry that builds none (``judge.name=none``) or a
    config without a judge section (the library's ``Config``)."""
    if getattr(cfg, "judge", None) is None:
        return None
    needs = JUDGES.needs(cfg.judge.name, cfg.judge)
    llm, owns = judge_llm(cfg, run_llm, accountant) if "llm" in needs else (None, False)
    try:
        emb = judge_embedder(cfg, run_embedder) if "embedder" in needs and cfg.judge.acc_weight < 1 else None
        from atomicrag.llm.sampling import request_seed

        own_seed = cfg.judge.llm.seed if cfg.judge.llm_source == "own" else cfg.llm.seed
        # the released evaluation sends its seed (42) whatever its pipeline does (fidelity.request_seed
        # covers the pipeline's LLM class); a judge read as released sends the judge's own
        seed = own_seed if cfg.judge.judge_replies == "released" else request_seed(own_seed, cfg.fidelity)
        impl = build_judge(llm, emb, cfg.judge, cfg.fidelity, seed=seed)
    except BaseException:
        if owns:
            llm.close()
        raise
    if impl is None:
        return None
    settings = {
        "llm": cfg.judge.llm.model if cfg.judge.llm_source == "own" else f"run:{cfg.llm.model}",
        "embedder": getattr(emb, "name", None),
        "acc_weight": cfg.judge.acc_weight, "acc_similarity": cfg.judge.acc_similarity,
        "failures": cfg.judge.judge_failures,
    }
    return OwnedJudge(impl, llm, owns, settings)
