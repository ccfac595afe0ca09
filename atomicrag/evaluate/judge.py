"""Graph-Bench Answer Accuracy: ACC = w·FC + (1−w)·SS (paper Eq. 12-14; docs/fidelity.md, Metrics).

FC is the F1 of an LLM's TP/FP/FN classification of statements; SS is the similarity of the
answer's and the reference's embeddings. ``judge.acc_weight`` is w (paper 0.7, released
code and Graph-Bench 0.75) and ``judge.acc_similarity`` is ``cosine`` (paper: raw cosine)
or ``rescaled`` ((cos+1)/2, released code and Graph-Bench).

Skip rules, in the released code's order: both statement lists empty → skipped; answer has no
statement → ACC 0; reference has no statement (or is blank) → skipped. Skipped samples return
``acc=None`` with a status, and failed LLM calls are ``status="failed"``: under
``judge.judge_failures="excluded"`` (paper) their ``acc`` is None and they are left out of
means; under ``"zero"`` they score 0; under ``"released"`` they follow the released code: a failed
classification keeps its similarity (FC 0, ACC = (1−w)·SS), failed answer statements score 0 (the
released split returns no statements) and failed reference statements skip the sample. Every way
they are counted (status "failed"). ``fidelity.prompts=released`` sends the released judge prompts.

Batching: one ``chat()`` call splits every answer and reference into statements, a second
classifies every eligible sample, and one ``encode()`` call embeds all texts for SS.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch

from atomicrag.core.config import FidelityConfig, JudgeConfig
from atomicrag.evaluate import judge_released
from atomicrag.llm.protocol import ChatRequest
from atomicrag.prompts import judge as prompt
from atomicrag.prompts.released import for_fidelity

MODULE = "judge"
RELEASED_TRIES = 3  # the released classification is asked up to three times
STATUSES = ("scored", "empty_answer", "skipped_both_empty", "skipped_empty_reference", "failed")


def factual_correctness(tp: int, fp: int, fn: int) -> float:
    """FC = 2TP / (2TP + FP + FN) (Eq. 13); 0 when nothing was classified."""
    denom = 2 * tp + fp + fn
    return 2 * tp / denom if denom else 0.0


def similarity_score(cosine: float, mode: str) -> float:
    if mode == "cosine":
        return cosine
    if mode == "rescaled":
        return (cosine + 1.0) / 2.0
    raise ValueError(f"unknown acc_similarity {mode!r}")


def answer_accuracy(fc: float, ss: float, weight: float) -> float:
    return weight * fc + (1.0 - weight) * ss


def cosine_pairs(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Row-wise cosine of two [n, d] tensors; normalises again in case an embedder does not."""
    a = torch.nn.functional.normalize(a.to(dtype), dim=-1)
    b = torch.nn.functional.normalize(b.to(dtype), dim=-1)
    return (a * b).sum(-1)  # [n]


@dataclass
class AccuracyVerdict:
    acc: float | None  # None: skipped or failed (see status)
    status: str
    fc: float | None = None
    ss: float | None = None
    cosine: float | None = None
    tp: int | None = None
    fp: int | None = None
    fn: int | None = None
    answer_statements: list[str] = field(default_factory=list)
    reference_statements: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AnswerAccuracyJudge:
    def __init__(self, llm: Any, embedder: Any, cfg: JudgeConfig, fidelity: FidelityConfig | None = None, *,
                 seed: int | None = 0) -> None:
        """``cfg``: the judge's own settings (its released behaviours, its budget); ``fidelity``:
        where its prompts come from (``fidelity.prompts``; None: this project's)."""
        similarity_score(0.0, cfg.acc_similarity)  # fail early on a bad mode
        self.llm = llm
        self.embedder = embedder
        self.weight = float(cfg.acc_weight)
        self.failures = cfg.judge_failures
        self.failed_acc = 0.0 if cfg.judge_failures == "zero" else None  # counted either way
        # fidelity.prompts=released: the released judge prompts
        self.released = for_fidelity(fidelity) if fidelity is not None else None
        self.similarity = cfg.acc_similarity
        self.max_tokens = cfg.max_tokens
        self.seed = seed
        # released: free text with no cap, read as released (judge_released), the classification
        # asked up to 3 times, "\n" -> " " before embedding (LangChain's embed_query), the cosine
        # of fp32 embeddings in float64 (numpy); structured: JSON schemas and judge.max_tokens
        self.replies = cfg.judge_replies

    def _request(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> ChatRequest:
        # Temperature 0: a judge must give the same verdict on a re-run (and hit the cache).
        if self.replies == "released":  # no schema, no cap (the backend's own limit applies)
            return ChatRequest(messages=messages, schema=None, temperature=0.0,
                               max_tokens=None, seed=self.seed, module=MODULE)  # type: ignore[arg-type]
        return ChatRequest(messages=messages, schema=schema, temperature=0.0,
                           max_tokens=self.max_tokens, seed=self.seed, module=MODULE)

    def judge(self, questions: Sequence[str], answers: Sequence[str],
              references: Sequence[str]) -> list[AccuracyVerdict]:
        if not len(questions) == len(answers) == len(references):
            raise ValueError("questions, answers and references must have the same length")
        n = len(questions)
        verdicts: list[AccuracyVerdict | None] = [None] * n
        stmts: dict[tuple[int, str], list[str]] = {}
        tokens = [[0, 0] for _ in range(n)]
        errors: list[list[str]] = [[] for _ in range(n)]

        # 1. Statements. A blank text has none and needs no call, except as released: the released
        # judge asks the model to split even an empty answer (and a model may write statements for it)
        split_jobs: list[tuple[int, str]] = []
        for i in range(n):
            for role, text in (("answer", answers[i]), ("reference", references[i])):
                if (text or "").strip() or self.replies == "released":
                    split_jobs.append((i, role))
                else:
                    stmts[(i, role)] = []
        texts = {"answer": answers, "reference": references}
        replies = self._chat([self._request(prompt.build_statement_messages(questions[i], texts[r][i], self.released),
                                            prompt.SCHEMA["statements"]) for i, r in split_jobs])
        for (i, role), reply in zip(split_jobs, replies, strict=True):
            _add_tokens(tokens[i], reply)
            try:
                if reply.error is not None:
                    raise ValueError(str(reply.error))
                stmts[(i, role)] = (judge_released.parse_statements_released(reply.text)
                                    if self.replies == "released" else prompt.parse_statements(reply.parsed))
            except (TypeError, ValueError) as exc:
                errors[i].append(f"{role} statements: {exc}")

        # 2. Skip rules, then classification for the samples that need it.
        classify: list[int] = []
        for i in range(n):
            a, r = stmts.get((i, "answer")), stmts.get((i, "reference"))
            if errors[i]:
                verdicts[i] = AccuracyVerdict(acc=self._failed_split_acc(i, stmts), status="failed")
            elif not a and not r:
                verdicts[i] = AccuracyVerdict(acc=None, status="skipped_both_empty")
            elif not a:
                verdicts[i] = AccuracyVerdict(acc=0.0, status="empty_answer")
            elif not r:
                verdicts[i] = AccuracyVerdict(acc=None, status="skipped_empty_reference")
            else:
                classify.append(i)
        fc: dict[int, float] = {}
        counts: dict[int, tuple[int, int, int]] = {}
        if self.weight > 0:
            requests = {i: self._request(
                prompt.build_classify_messages(questions[i], stmts[(i, "answer")], stmts[(i, "reference")],
                                              self.released),
                prompt.SCHEMA["classify"]) for i in classify}
            last_error: dict[int, Exception] = {}
            todo = list(classify)
            for attempt in range(RELEASED_TRIES if self.replies == "released" else 1):
                # each released try is a new call to the model (as released), not the cache's copy
                replies = self._chat([replace(requests[i], attempt=attempt) for i in todo])
                for i, reply in zip(todo, replies, strict=True):
                    _add_tokens(tokens[i], reply)
                    try:
                        if reply.error is not None:
                            raise ValueError(str(reply.error))
                        counts[i] = (judge_released.parse_classification_released(reply.text)
                                     if self.replies == "released" else prompt.parse_classification(reply.parsed))
                        fc[i] = factual_correctness(*counts[i])
                        last_error.pop(i, None)
                    except (TypeError, ValueError) as exc:
                        last_error[i] = exc
                todo = [i for i in todo if i in last_error]
                if not todo:
                    break
            for i, exc in last_error.items():
                errors[i].append(f"classification: {exc}")
                if self.failures != "released":  # released: FC 0, similarity still counts
                    verdicts[i] = AccuracyVerdict(acc=self.failed_acc, status="failed")
        scored = [i for i in classify if verdicts[i] is None]

        # 3. Semantic similarity of the full texts, one encode call for all scored samples.
        cos: dict[int, float] = {}
        if self.weight < 1 and scored:
            texts = [answers[i] for i in scored] + [references[i] for i in scored]
            if self.replies == "released":
                texts = [t.replace("\n", " ") for t in texts]
            emb = self.embedder.encode(texts)
            dtype = torch.float32
            if self.replies == "released":  # fp32 embeddings, the cosine in float64 as numpy does
                emb, dtype = torch.as_tensor(emb).float(), torch.float64
            sims = cosine_pairs(emb[: len(scored)], emb[len(scored):], dtype)
            cos = {i: float(s) for i, s in zip(scored, sims.tolist(), strict=True)}
        for i in scored:
            f = fc.get(i, 0.0)
            s = similarity_score(cos[i], self.similarity) if i in cos else 0.0
            tp, fp, fn = counts.get(i, (None, None, None))
            verdicts[i] = AccuracyVerdict(acc=answer_accuracy(f, s, self.weight),
                                          status="failed" if errors[i] else "scored",
                                          fc=fc.get(i), ss=s if i in cos else None, cosine=cos.get(i),
                                          tp=tp, fp=fp, fn=fn)

        out: list[AccuracyVerdict] = []
        for i, v in enumerate(verdicts):
            assert v is not None
            v.answer_statements = stmts.get((i, "answer"), [])
            v.reference_statements = stmts.get((i, "reference"), [])
            v.errors = errors[i]
            v.prompt_tokens, v.completion_tokens = tokens[i]
            out.append(v)
        return out

    def _failed_split_acc(self, i: int, stmts: dict[tuple[int, str], list[str]]) -> float | None:
        """ACC of a sample whose statement split failed."""
        if self.failures != "released":
            return self.failed_acc
        # released: a failed split is an empty list; the reference's empty list skips the sample
        # (it cannot be graded), the answer's scores 0
        return None if not stmts.get((i, "reference")) else 0.0

    def _chat(self, requests: list[ChatRequest]) -> list[Any]:
        if not requests:
            return []
        replies = self.llm.chat(requests)
        if len(replies) != len(requests):
            raise RuntimeError(f"LLM returned {len(replies)} results for {len(requests)} requests")
        return replies


def _add_tokens(acc: list[int], reply: Any) -> None:
    acc[0] += int(reply.prompt_tokens or 0)
    acc[1] += int(reply.completion_tokens or 0)


def build_judge(llm: Any, embedder: Any, cfg: JudgeConfig, fidelity: FidelityConfig | None = None,
                **kwargs: Any) -> AnswerAccuracyJudge | None:
    """The ``registry.JUDGES`` entry ``cfg.name``: ``llm`` → the Graph-Bench judge, ``none`` → None
    (no ACC computed). What the entry declares it needs must be given (the embedder only while the
    semantic similarity counts: ``judge.acc_weight < 1``)."""
    from atomicrag.core.registry import JUDGES

    needs = JUDGES.needs(cfg.name)  # an unknown name raises here, naming the known ones
    if ("llm" in needs and llm is None) or ("embedder" in needs and embedder is None and cfg.acc_weight < 1):
        raise ValueError(f"judge.name={cfg.name} needs an LLM backend and an embedder")
    return JUDGES.get(cfg.name)(llm, embedder, cfg, fidelity, **kwargs)


def judge_summary(verdicts: Sequence[AccuracyVerdict]) -> dict[str, Any]:
    """metrics.json's ``judge``: verdict status counts and the mean ACC over the samples that have
    one (scored + empty_answer)."""
    counts = {s: sum(v.status == s for v in verdicts) for s in STATUSES}
    values = [v.acc for v in verdicts if v.acc is not None]
    return {"n": len(verdicts), **counts, "acc": sum(values) / len(values) if values else None}
