"""Reply lengths the run plan learns from recorded runs (``harness/plan.py`` asks; the stages
give their prompts): per plan stage, the completion tokens per question that committed and local
runs of the same model, on runs shaped alike, measured; a stage with none keeps EXPECTED_REPLY."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atomicrag.core.config import Config
from atomicrag.harness.plan_record import RunPlan

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
