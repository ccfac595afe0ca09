"""Readers: generate the answer from the merged context (paper §1 step 5).

``precise`` gives the short answer the multi-hop benchmarks score with EM/F1; ``abstract``
gives the complete answer Graph-Bench scores with answer accuracy. Both reason after
"Thought:" and answer after "Answer:"; the final answer is what follows the last "Answer:".
All questions go to the backend in one ``chat()`` call (module ``answer``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from atomicrag.answer.loops import without_loop
from atomicrag.core.config import ReaderConfig
from atomicrag.llm.budget import context_window, fit_items
from atomicrag.llm.protocol import ChatRequest, continues_replies, request_deadline
from atomicrag.prompts import reader as prompt
from atomicrag.prompts.reader import (
    ParsedAnswer,
    format_context,
    parse_answer,
    parse_answer_released,
    short_answer,
)
from atomicrag.prompts.released import ReleasedPrompts

MODULE = "answer"
__all__ = [
    "LLMReader",
    "ParsedAnswer",
    "ReaderOutput",
    "build_reader",
    "format_context",
    "parse_answer",
    "resolve_reader_name",
    "short_answer",
    "reader_summary",
]


@dataclass
class ReaderOutput:
    answer: str  # the parsed final answer ("" when the call failed); precise: the short span
    raw: str  # the model's full reply (kept in the trace)
    thought: str = ""
    marker_found: bool = False  # False: the reply had no "Answer:" (whole reply used)
    failed: bool = False
    error: str | None = None
    # the backend stopped at max_tokens (finish_reason "length"): the reply was cut by the budget the
    # config chose. Not an LLM failure: the answer is what follows "Answer:" in the cut reply, or
    # empty (scored as wrong) when the cut came before it; reported as cut, by module and question
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context_dropped: int = 0  # lowest-ranked context items left out to fit the model's window
    followup: str = ""  # "continue" | "ask": the span came from a follow-up call (no "Answer:" in the reply)
    # the cut reply was a loop (a line repeated until the budget: answer.loops); it was read up to
    # the loop, and a larger budget would only loop longer
    looped: bool = False
    timed_out: bool = False  # no reply within reader.timeout_s: answer "", failed too

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LLMReader:
    def __init__(self, llm: Any, kind: str, cfg: ReaderConfig | None = None, *,
                 temperature: float = 0.0, seed: int | None = 0, max_tokens: int | None = None,
                 released: ReleasedPrompts | None = None, uncapped: bool = False) -> None:
        if kind not in prompt.KINDS:
            raise ValueError(f"reader kind {kind!r} is not one of {', '.join(prompt.KINDS)}")
        self.llm = llm
        self.name = kind
        cfg = cfg or ReaderConfig()
        self.max_tokens = max_tokens or cfg.max_tokens
        self.frequency_penalty = cfg.frequency_penalty  # the loop guard sent with each answer call
        self.timeout_s = request_deadline(llm, "reader.timeout_s", cfg.timeout_s)
        self.temperature = temperature
        self.seed = seed
        context_style = cfg.reader_context  # the context layout: numbered | wikipedia_title (released)
        if context_style not in prompt.CONTEXT_STYLES:
            raise ValueError(f"context_style {context_style!r} is not one of {', '.join(prompt.CONTEXT_STYLES)}")
        self.context_style = context_style
        self.released = released  # fidelity.prompts=released: the released rag_qa_<kind> template
        self.dropped: list[int] = []  # per question of the last requests(): context items cut
        # Only our precise prompt in our layout asks for the span after "Answer:"; the released
        # prompts and layout keep their own answer form (no follow-up).
        # released: the text between the first and second "Answer:" as it stands (no span
        # cleaning, no follow-up call); own: after the last "Answer:", cleaned to the span
        self.answer_extraction = answer_extraction = cfg.answer_extraction
        self.uncapped = uncapped  # fidelity.budgets=released: no max_tokens sent
        # the follow-up settings are read only where a follow-up can happen (core.config_query.READER_READS)
        if kind != "precise" or context_style != "numbered" or released is not None or answer_extraction == "released":
            mode = "none"
        elif (mode := cfg.answer_followup) == "auto":
            mode = "continue" if continues_replies(llm) else "ask"
        elif mode == "continue" and not continues_replies(llm):
            raise ValueError("reader.answer_followup=continue needs a backend that continues a reply "
                             "(vLLM, transformers); use auto or ask")
        self.followup = mode
        self.followup_max_tokens = cfg.followup_max_tokens if mode != "none" else 0

    def requests(self, questions: Sequence[str], contexts: Sequence[Sequence[Any]]) -> list[ChatRequest]:
        window = context_window(self.llm)
        reqs, self.dropped = [], []
        for q, ctx in zip(questions, contexts, strict=True):
            # Context is ranked best first: what does not fit the window is the least relevant.
            kept, dropped = fit_items(lambda c, q=q: prompt.build_messages(self.name, q, c, self.context_style, self.released), ctx,
                                      window, self.max_tokens)
            self.dropped.append(dropped)
            reqs.append(ChatRequest(messages=prompt.build_messages(self.name, q, kept, self.context_style, self.released), schema=None,
                                    temperature=self.temperature,
                                    max_tokens=None if self.uncapped else self.max_tokens,
                                    seed=self.seed, module=MODULE, frequency_penalty=self.frequency_penalty,
                                    deadline_s=self.timeout_s))
        return reqs

    def answer(self, questions: Sequence[str], contexts: Sequence[Sequence[Any]]) -> list[ReaderOutput]:
        """``contexts[i]`` is question i's context: ``ContextItem``s (or plain strings)."""
        if len(questions) != len(contexts):
            raise ValueError("one context per question is required")
        if not questions:
            return []
        requests = self.requests(questions, contexts)
        results = self.llm.chat(requests)
        if len(results) != len(questions):
            raise RuntimeError(f"LLM returned {len(results)} results for {len(questions)} requests")
        return self.finish(requests, results)

    def finish(self, requests: list[ChatRequest], results: list[Any]) -> list[ReaderOutput]:
        """Outputs of the replies to ``requests`` (made by the last ``requests()`` call): parsed,
        and followed up where a reply has no answer marker."""
        outputs = self._parse(results)
        if self.followup != "none":
            self._follow_up(requests, outputs)
        return outputs

    def _follow_up(self, requests: list[ChatRequest], outputs: list[ReaderOutput]) -> None:
        """One short call per reply that has no answer marker: the span comes from it. A follow-up
        that fails makes the question fail (its sentence is not passed off as the answer)."""
        # a reply cut by the budget is left as it is, unless it was a loop: then the follow-up reads
        # it up to the loop (more budget would not have helped)
        todo = [i for i, o in enumerate(outputs)
                if not (o.failed or o.marker_found or (o.truncated and not o.looped))]
        if not todo:
            return
        follow = [ChatRequest(messages=prompt.followup_messages(requests[i].messages, without_loop(outputs[i].raw)[0],
                                                                self.followup),
                              schema=None, temperature=self.temperature, max_tokens=self.followup_max_tokens,
                              seed=self.seed, module=MODULE, continue_reply=self.followup == "continue")
                  for i in todo]
        results = self.llm.chat(follow)
        for i, r in zip(todo, results, strict=True):
            o = outputs[i]
            o.prompt_tokens += int(r.prompt_tokens or 0)
            o.completion_tokens += int(r.completion_tokens or 0)
            o.followup = self.followup
            if r.error is not None:
                o.failed, o.answer, o.error = True, "", f"answer follow-up ({self.followup}): {r.error}"
                continue
            text = r.text or ""
            before = without_loop(o.raw)[0]
            o.raw = (f"{before.rstrip()}\n{prompt.ANSWER_MARKER}{text}" if self.followup == "continue"
                     else f"{o.raw}\n[asked for the short answer]\n{text}")
            o.answer = short_answer(parse_answer(f"{prompt.ANSWER_MARKER} {text}").answer)

    def _parse(self, results: list[Any]) -> list[ReaderOutput]:
        outputs = []
        for r, dropped in zip(results, self.dropped, strict=True):
            tokens = {"prompt_tokens": int(r.prompt_tokens or 0),
                      "completion_tokens": int(r.completion_tokens or 0), "context_dropped": dropped}
            if r.error is not None:
                outputs.append(ReaderOutput(answer="", raw=r.text or "", failed=True, error=str(r.error),
                                            timed_out=bool(getattr(r, "timed_out", False)), **tokens))
                continue
            if self.answer_extraction == "released":  # a cut reply is read the same way
                parsed = parse_answer_released(r.text or "")
                outputs.append(ReaderOutput(answer=parsed.answer, raw=r.text or "", thought=parsed.thought,
                                            marker_found=parsed.marker_found,
                                            truncated=getattr(r, "finish_reason", None) == "length", **tokens))
                continue
            if getattr(r, "finish_reason", None) == "length":
                # Cut off at max_tokens: without "Answer:" the parser would return the thought as
                # the answer, so the answer is empty; after it, what was written is kept (the
                # released code, too, reads whatever follows "Answer:").
                # A reply that looped is read up to its loop: "Answer: X" repeated until the cut
                # gives X, not a last copy cut mid-word.
                before, looped = without_loop(r.text or "")
                parsed = parse_answer(before)
                outputs.append(ReaderOutput(answer=parsed.answer if parsed.marker_found else "",
                                            raw=r.text or "", thought=parsed.thought,
                                            marker_found=parsed.marker_found, truncated=True, looped=looped,
                                            **tokens))
                continue
            parsed = parse_answer(r.text or "")
            # Our precise prompt asks for the short span; the metric scores exactly that, so
            # citation marks, lead-ins and a second line are stripped. The
            # released layout (wikipedia_title) and the abstract reader keep their own form.
            span = (short_answer(parsed.answer) if self.name == "precise" and self.context_style == "numbered"
                    else parsed.answer)
            outputs.append(ReaderOutput(answer=span, raw=r.text or "", thought=parsed.thought,
                                        marker_found=parsed.marker_found, **tokens))
        return outputs


def resolve_reader_name(name: str, dataset_reader: str = "precise") -> str:
    """``reader.name=dataset`` means the dataset's own reader (``DatasetConfig.reader``)."""
    return dataset_reader if name == "dataset" else name


def build_reader(name: str, llm: Any, cfg: ReaderConfig | None = None, *,
                 dataset_reader: str = "precise", **kwargs: Any) -> LLMReader | None:
    """Reader for ``name`` (precise | abstract | dataset | none: the ``registry.READERS`` entry).
    ``none`` (retrieval-only runs) returns None: the pipeline then skips answering."""
    from atomicrag.core.registry import READERS

    kind = resolve_reader_name(name, dataset_reader)
    return READERS.build(kind, llm=llm, kind=kind, cfg=cfg, **kwargs)


def reader_summary(outputs: Sequence[ReaderOutput]) -> dict[str, Any]:
    """metrics.json's ``reader``: failed, cut, looped or trimmed replies and answers without a marker."""
    return {
        "n": len(outputs),
        "failed": sum(o.failed for o in outputs),
        "timed_out": sum(o.timed_out for o in outputs),  # of the failed: no reply within reader.timeout_s
        "truncated": sum(o.truncated for o in outputs),
        "looped": sum(o.looped for o in outputs),  # cut replies that were a repeated line
        "missing_answer_marker": sum((not o.failed) and not o.marker_found for o in outputs),
        "answer_followups": sum(bool(o.followup) for o in outputs),  # spans from a follow-up call
        "empty_answers": sum((not o.failed) and not o.answer for o in outputs),
        "context_trimmed": sum(o.context_dropped > 0 for o in outputs),  # prompts cut to the window
    }
