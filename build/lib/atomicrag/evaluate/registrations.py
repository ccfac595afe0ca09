"""The judges this package provides, by ``judge.name`` (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import EMB, JUDGES, LLM

JUDGES.add("llm", "atomicrag.evaluate.judge:AnswerAccuracyJudge", needs=LLM | EMB)
JUDGES.add("none", "atomicrag.core.registry:nothing")
