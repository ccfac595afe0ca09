"""Prompts budgeted to the model's context window: the reader and the sieve drop their
lowest-ranked context, count it, and never send a prompt the server would refuse (HTTP 400)."""
from __future__ import annotations

from atomicrag.answer.readers import LLMReader, reader_summary
from atomicrag.core.config import FidelityConfig, ReaderConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.llm.accounting import Accountant, AccountedLLM
from atomicrag.llm.budget import context_window, estimate_tokens, fit_items
from atomicrag.llm.fake import FakeLLM
from atomicrag.prompts import reader as reader_prompt
from atomicrag.retrieve.sieve import LLMSieve

SENTENCE = "The Rhine Falls is a waterfall on the High Rhine in Switzerland, near Schaffhausen. "


class WindowedLLM(FakeLLM):
    """A fake with a context window that, like vLLM, refuses prompts that do not fit."""

    def __init__(self, window: int) -> None:
        super().__init__("windowed", max_retries=0)
        self.context_window = window
        self.prompt_chars: list[int] = []

    def chat(self, requests):  # type: ignore[no-untyped-def]
        for r in requests:
            self.prompt_chars.append(sum(len(m["content"]) for m in r.messages))
            # the estimate is an upper bound of real tokens (~4 chars/token for English BPE)
            assert sum(len(m["content"]) for m in r.messages) / 4 + r.max_tokens <= self.context_window
        return super().chat(requests)


def test_fit_items_keeps_the_longest_fitting_prefix() -> None:
    items = [f"item {i}: " + SENTENCE for i in range(40)]

    def build(prefix: list[str]) -> list[dict[str, str]]:
        return [{"role": "user", "content": "\n".join(prefix)}]

    kept, dropped = fit_items(build, items, window=1024, max_tokens=256)
    assert kept == items[: len(kept)] and dropped == 40 - len(kept) > 0
    assert estimate_tokens(build(kept)) <= 1024 - 256
    assert estimate_tokens(build(items[: len(kept) + 1])) > 1024 - 256 - 32  # one more would not fit
    assert fit_items(build, items, window=None, max_tokens=256) == (items, 0)  # unknown window: untouched
    assert fit_items(build, items[:2], window=1024, max_tokens=256) == (items[:2], 0)


def test_context_window_is_found_through_wrappers() -> None:
    llm = WindowedLLM(2048)
    assert context_window(AccountedLLM(llm, Accountant())) == 2048
    assert context_window(FakeLLM()) is None


def test_reader_trims_lowest_ranked_context_and_counts_it() -> None:
    llm = WindowedLLM(1024)
    reader = LLMReader(llm, "precise", ReaderConfig(max_tokens=128))
    long_ctx = [f"[rank {i}] " + SENTENCE * 2 for i in range(30)]
    out = reader.answer(["Where are the Rhine Falls?", "Short one?"], [long_ctx, long_ctx[:2]])
    assert not out[0].failed and out[0].context_dropped > 0 and out[1].context_dropped == 0
    sent = llm.prompt_chars[0]
    kept = 30 - out[0].context_dropped
    # what was sent is exactly the best-ranked prefix
    full = reader_prompt.build_messages("precise", "Where are the Rhine Falls?", long_ctx[:kept])
    assert sent == sum(len(m["content"]) for m in full)
    assert reader_summary(out)["context_trimmed"] == 1


def test_sieve_trims_candidates_and_does_not_keep_them() -> None:
    llm = WindowedLLM(1024)
    sieve = LLMSieve(llm, SieveConfig(name="llm"), FidelityConfig(), max_tokens=128)
    atoms = [ScoredAtom(atom_id=f"a{i}", text=f"[{i}] " + SENTENCE * 2, score=1.0 - i / 100, passage_id="p")
             for i in range(40)]
    [res] = sieve.sieve(["Where are the Rhine Falls?"], [["Where are the Rhine Falls?"]], [[atoms]])
    [decision] = res.decisions
    assert decision.trimmed_ids and decision.trimmed_ids == [a.atom_id for a in atoms[-len(decision.trimmed_ids):]]
    assert not set(decision.trimmed_ids) & {a.atom_id for a in res.kept}
    assert len(decision.candidate_ids) + len(decision.trimmed_ids) == 40
