"""SQLite cache (hits, no-cache rules, threads and processes) and per-module accounting."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from atomicrag.llm.accounting import Accountant, AccountedLLM
from atomicrag.llm.cache import CachedLLM, cache_key
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.protocol import ChatRequest, ChatResult

SCHEMA = {"type": "object", "properties": {"named_entities": {"type": "array", "items": {"type": "string"}}},
          "required": ["named_entities"]}


def _req(text: str, **kw) -> ChatRequest:
    kw.setdefault("schema", SCHEMA)
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def test_hit_returns_cached_with_zero_new_tokens(tmp_path: Path) -> None:
    fake = FakeLLM()
    llm = CachedLLM(fake, tmp_path / "c.sqlite")
    [first] = llm.chat([_req("Paris is the capital of France")])
    assert first.ok and not first.cached and first.prompt_tokens == 6
    [again] = llm.chat([_req("Paris is the capital of France")])
    assert again.cached and again.parsed == first.parsed and again.text == first.text
    assert (again.prompt_tokens, again.completion_tokens) == (0, 0)
    assert (again.cached_prompt_tokens, again.cached_completion_tokens) == (6, first.completion_tokens)
    assert fake.calls == 1 and len(llm) == 1
    # A new wrapper on the same file (a re-run) is served from disk.
    [rerun] = CachedLLM(FakeLLM(), tmp_path / "c.sqlite").chat([_req("Paris is the capital of France")])
    assert rerun.cached


def test_large_batch_lookup_spans_several_statements(tmp_path: Path) -> None:
    """More keys than one lookup statement takes (500): every one is found on the re-run."""
    reqs = [_req(f"fact {i}: O'Brien said \"hi\"") for i in range(1203)]
    first = CachedLLM(FakeLLM(), tmp_path / "c.sqlite").chat(reqs)
    fake = FakeLLM()
    again = CachedLLM(fake, tmp_path / "c.sqlite").chat(reqs)
    assert fake.calls == 0 and all(r.cached for r in again)
    assert [r.text for r in again] == [r.text for r in first]


def test_key_covers_sampling_params_and_schema() -> None:
    base = _req("q")
    keys = {cache_key("m", base), cache_key("m2", base), cache_key("m", _req("q", max_tokens=5)),
            cache_key("m", _req("q", seed=1)), cache_key("m", _req("q", temperature=0.5)),
            cache_key("m", _req("q", schema=None)), cache_key("m", _req("q", continue_reply=True))}
    assert len(keys) == 7  # a continued reply is another request than the same messages answered anew
    assert cache_key("m", _req("q", module="other")) == cache_key("m", base)  # module is not sampling


def test_sampled_unseeded_and_failures_are_not_cached(tmp_path: Path) -> None:
    fake = FakeLLM()
    llm = CachedLLM(fake, tmp_path / "c.sqlite")
    llm.chat([_req("x", temperature=0.7, seed=None)] * 2)
    llm.chat([_req("x", temperature=0.7, seed=None)])
    assert fake.calls == 3 and len(llm) == 0
    llm.chat([_req("y", temperature=0.7, seed=3)])
    assert len(llm) == 1  # seeded sampling is reproducible, so it is cached
    bad = CachedLLM(FakeLLM(responses=lambda r, a: "no json", max_retries=0), tmp_path / "c.sqlite")
    [r] = bad.chat([_req("z")])
    assert not r.ok and len(bad) == 1


def test_duplicates_in_one_batch_run_once(tmp_path: Path) -> None:
    fake = FakeLLM()
    results = CachedLLM(fake, tmp_path / "c.sqlite").chat([_req("a"), _req("b"), _req("a")])
    assert fake.calls == 2
    assert [r.cached for r in results] == [False, False, True]
    assert results[0].parsed == results[2].parsed and results[2].prompt_tokens == 0


def test_threads_share_one_file_without_losing_entries(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    llm = CachedLLM(FakeLLM(), path)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(40):
                llm.chat([_req(f"thread {t} item {i}"), _req(f"shared item {i}")])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(llm) == 6 * 40 + 40
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


WORKER = textwrap.dedent("""
    import json, sys
    from atomicrag.llm.cache import CachedLLM
    from atomicrag.llm.fake import FakeLLM
    from atomicrag.llm.protocol import ChatRequest
    path, tag = sys.argv[1], sys.argv[2]
    llm = CachedLLM(FakeLLM(), path)
    hits = 0
    for i in range(60):
        reqs = [ChatRequest(messages=[{"role": "user", "content": f"{tag} {i}"}]),
                ChatRequest(messages=[{"role": "user", "content": f"shared {i}"}])]
        hits += sum(r.cached for r in llm.chat(reqs))
    print(json.dumps({"hits": hits}))
""")


def test_two_processes_share_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), tag], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for tag in ("p1", "p2")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    llm = CachedLLM(FakeLLM(), path)
    assert len(llm) == 60 * 2 + 60
    results = llm.chat([ChatRequest(messages=[{"role": "user", "content": f"shared {i}"}]) for i in range(60)])
    assert all(r.cached and r.prompt_tokens == 0 for r in results)
    assert sum(json.loads(o)["hits"] for o, _ in outs) <= 60


def test_accounting_per_module(tmp_path: Path) -> None:
    acct = Accountant()
    fail = FakeLLM(responses=lambda r, a: "nope" if "bad" in r.messages[0]["content"] else '{"a": 1}',
                   max_retries=1)
    llm = AccountedLLM(CachedLLM(fail, tmp_path / "c.sqlite"), acct)
    schema = {"type": "object", "required": ["a"]}
    llm.chat([_req("one two", module="sieve", schema=schema), _req("bad", module="reader", schema=schema)])
    llm.chat([_req("one two", module="sieve", schema=schema)])  # cache hit
    with acct.time("sieve"):
        pass
    d = acct.to_dict()
    sieve, reader = d["modules"]["sieve"], d["modules"]["reader"]
    assert (sieve["calls"], sieve["cached_calls"], sieve["failures"]) == (2, 1, 0)
    assert sieve["prompt_tokens"] == 2 and sieve["cached_prompt_tokens"] == 2 and sieve["wall_s"] >= 0
    assert (reader["calls"], reader["failures"], reader["attempts"], reader["prompt_tokens"]) == (1, 1, 2, 2)
    assert reader["errored_attempts"] == 0  # an unparsable reply is a reply: its tokens were counted
    acct.record("sieve", [ChatResult(prompt_tokens=4000, attempts=2, errored_attempts=1)])  # one timeout, one reply
    sieve = acct.to_dict()["modules"]["sieve"]
    assert sieve["attempts"] - sieve["errored_attempts"] == 2  # the two replies behind its 4,002 prompt tokens
    assert d["total"]["calls"] == 3 and d["total"]["prompt_tokens"] == 4
    json.dumps(d)


def test_accountant_is_thread_safe() -> None:
    acct = Accountant()
    llm = AccountedLLM(FakeLLM(), acct)

    def work() -> None:
        for _ in range(50):
            llm.chat([_req("a b c", module="atomize", schema=None)])
            with acct.time("atomize"):
                pass

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = acct.stats("atomize")
    assert s.calls == 200 and s.prompt_tokens == 600


def test_truncated_replies_are_not_cached(tmp_path: Path) -> None:
    """A reply cut at max_tokens is the reader's counted failure: a re-run must see it again,
    not a cached success without its finish_reason."""

    class Truncating(FakeLLM):
        def chat(self, requests):  # type: ignore[override]
            out = super().chat(requests)
            for r in out:
                r.finish_reason = "length"
            return out

    fake = Truncating()
    llm = CachedLLM(fake, tmp_path / "c.sqlite")
    [first] = llm.chat([_req("a long answer", schema=None)])
    [again] = llm.chat([_req("a long answer", schema=None)])
    assert first.finish_reason == again.finish_reason == "length" and not again.cached
    assert fake.calls == 2 and len(llm) == 0
