"""The judge's estimate for the run plan (``harness/plan.py``): the requests Graph-Bench answer
accuracy sends, the answer side sized as the reference."""
from __future__ import annotations

from typing import Any

from atomicrag.llm.protocol import ChatRequest
from atomicrag.prompts import judge as judge_prompt


def judge_requests(cfg: Any, questions: list[Any]) -> list[ChatRequest]:
    """Per question: statements of the answer and of the reference, then one classification."""
    budget = cfg.judge.max_tokens
    reqs = []
    for q in questions:
        ref = " ".join(q.answers)
        reqs.append(ChatRequest(judge_prompt.build_statement_messages(q.question, ref), None, max_tokens=budget))
        reqs.append(ChatRequest(judge_prompt.build_statement_messages(q.question, ref), None, max_tokens=budget))
        reqs.append(ChatRequest(judge_prompt.build_classify_messages(q.question, [ref], [ref]), None,
                                max_tokens=budget))
    return reqs
