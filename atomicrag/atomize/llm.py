"""``llm`` atomizer (the paper's): per chunk an NER call, then the unified extraction call.

Chunks are processed in batches; each batch sends all its NER requests in one
``LLMBackend.chat`` call, then all its extraction requests in another, so the backend can run
them concurrently. Robustness, in order:

1. the LLM layer retries transport errors and unparseable JSON;
2. a reply that still fails is salvaged when it is only wrapped or truncated (complete
   elements are kept, the cut tail is dropped) and counted;
3. otherwise the chunk is re-asked ``retries`` times with a different seed and temperature;
4. a chunk that still fails becomes a ``ChunkFailure`` in the result (never silently dropped).

``fragment_entities`` that do not line up with the fragments are rebuilt by finding the
chunk's entity strings inside each fragment; such chunks are counted. Every finished chunk is
appended to a JSONL checkpoint, so a restarted run skips it.

Under ``fidelity.extraction_replies=released`` the two calls are asked as the released code asks
them (no JSON schema, no re-asking; no cap under ``fidelity.budgets=released``) and read by
``prompts/released_replies.py``: an unreadable reply is an empty result, as released, and each one
is counted (``released_fallback_ner`` / ``released_fallback_extraction`` in the stats; a run fails
past ``max_failure_rate``). A request that fails outright (transport, HTTP, an empty reply) is
still a failed chunk, retried by the next run: the released code would index it as empty, which
hides a dead server.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atomicrag.atomize.base import (
    atom_id,
    batched,
    check_chunks,
    dedupe_keep_order,
    find_span,
    pbar,
    progress_enabled,
)
from atomicrag.atomize.checkpoint import ChunkCheckpoint
from atomicrag.atomize.matcher import TermMatcher
from atomicrag.core.config import AtomizerConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Chunk, ChunkFailure, Triple
from atomicrag.llm.json_repair import salvage_json
from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend
from atomicrag.llm.sampling import attempt_sampling, sampling_fingerprint
from atomicrag.prompts import extraction as extraction_prompt
from atomicrag.prompts import ner as ner_prompt
from atomicrag.prompts._common import PromptParseError
from atomicrag.prompts.released import ReleasedPrompts
from atomicrag.prompts.released_replies import read_extraction, read_ner

log = logging.getLogger(__name__)

MODULE = "atomize"  # token/time accounting key of the LLM layer


@dataclass
class _State:
    chunk: Chunk
    calls: int = 0  # requests sent by the atomizer
    attempts: int = 0  # generations behind them (the LLM layer retries too); cache hits excluded
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    salvaged: bool = False
    entities: list[str] | None = None
    extraction: extraction_prompt.Extraction | None = None
    errors: list[str] = field(default_factory=list)
    fallbacks: dict[str, str] = field(default_factory=dict)  # released reading: call -> why it read empty
    padded: bool = False  # released reading: entity lists cut or padded to the fragments by position


def reply_object(res: ChatResult, required: tuple[str, ...] = ()) -> tuple[Any, bool]:
    """The JSON object of a reply and whether it was salvaged from a truncated text.

    A reply cut at max_tokens is re-read with ``salvage_json`` (the LLM layer's lenient parser in
    its complete-only mode: the layer's own parse keeps the cut-off last string, i.e. half an
    atom); the layer's object is used when the salvaged one lacks a required key.
    """
    truncated = res.finish_reason == "length"
    if res.text and (res.parsed is None or truncated):
        got = salvage_json(res.text)
        if got is not None and isinstance(got[0], dict) and all(k in got[0] for k in required):
            return got[0], got[1] or truncated
    if res.parsed is not None:
        return res.parsed, False
    raise PromptParseError(res.error or "reply has no JSON object")


def repair_alignment(fragments: list[str], candidates: list[str]) -> list[list[str]]:
    """Entities of each fragment, found by matching the candidate strings in its text."""
    matcher = TermMatcher(candidates)
    return [dedupe_keep_order(text[a:b] for a, b, _ in matcher.find(text)) for text in fragments]


class LLMAtomizer:
    name = "llm"
    uses_llm = True

    def __init__(self, cfg: AtomizerConfig | None = None, llm: LLMBackend | None = None, *,
                 checkpoint_path: str | Path | None = None, batch_size: int = 32, retries: int = 1,
                 ner_max_tokens: int | None = None, extraction_max_tokens: int | None = None,
                 temperature: float = 0.0, seed: int | None = 0,
                 progress: bool | None = None, released_prompts: ReleasedPrompts | None = None,
                 extraction_replies: str = "structured", uncapped: bool = False,
                 **_: Any) -> None:
        if llm is None:
            raise ValueError("the llm atomizer needs an LLM backend (llm=...)")
        self.cfg = cfg or AtomizerConfig(name="llm")
        self.llm = llm
        self.checkpoint_path = checkpoint_path
        self.batch_size = max(1, batch_size)
        self.retries = max(0, retries)
        # budgets: atomizer.ner_max_tokens / extraction_max_tokens unless given here
        self.ner_max_tokens = self.cfg.ner_max_tokens if ner_max_tokens is None else ner_max_tokens
        self.extraction_max_tokens = (self.cfg.extraction_max_tokens if extraction_max_tokens is None
                                      else extraction_max_tokens)
        self.temperature, self.seed = temperature, seed  # llm.temperature/seed (llm.sampling)
        self.progress = progress_enabled(progress)
        self.released = released_prompts  # fidelity.prompts=released: the released templates
        if extraction_replies not in ("structured", "released"):
            raise ValueError(f"extraction_replies must be 'structured' or 'released', got {extraction_replies!r}")
        # fidelity.extraction_replies=released: free text read the released way, never re-asked
        self.released_replies = extraction_replies == "released"
        if self.released_replies:
            self.retries = 0
        self.uncapped = uncapped  # fidelity.budgets=released: no max_tokens sent

    def fingerprint(self) -> dict[str, Any]:
        """What besides the chunks and the config decides the output (for cache keys)."""
        return {
            "model": getattr(self.llm, "model", type(self.llm).__name__),
            "prompts": ([ner_prompt.VERSION, extraction_prompt.VERSION] if self.released is None else
                        {k: v for k, v in self.released.hashes().items()
                         if k in ("ner", "unified_triple_knowledge_fragment_extraction")}),
            "max_tokens": None if self.uncapped else [self.ner_max_tokens, self.extraction_max_tokens],
            "retries": self.retries,
            **sampling_fingerprint(self.temperature, self.seed),
            # only when set, so caches written before this switch stay valid
            **({"replies": "released"} if self.released_replies else {}),
        }

    # ----------------------------------------------------------------- requests
    def _request(self, messages: list[dict[str, str]], schema: dict, max_tokens: int, attempt: int) -> ChatRequest:
        return ChatRequest(messages=messages, schema=None if self.released_replies else schema,
                           max_tokens=None if self.uncapped else max_tokens, module=MODULE,
                           **attempt_sampling(self.temperature, self.seed, attempt))

    def _phase(self, states: list[_State], kind: str) -> None:
        """Run one prompt (``ner`` or ``extraction``) for every state, with retries."""
        pending = list(states)
        for attempt in range(self.retries + 1):
            if not pending:
                break
            reqs = []
            for st in pending:
                c = st.chunk
                if kind == "ner":
                    msgs = ner_prompt.build_messages(c.text, c.title, self.released)
                    reqs.append(self._request(msgs, ner_prompt.SCHEMA, self.ner_max_tokens, attempt))
                else:
                    msgs = extraction_prompt.build_messages(c.text, st.entities or [], c.title, self.released)
                    reqs.append(self._request(msgs, extraction_prompt.SCHEMA, self.extraction_max_tokens, attempt))
            results = self.llm.chat(reqs)
            if len(results) != len(reqs):
                raise RuntimeError(f"LLM backend returned {len(results)} results for {len(reqs)} requests")
            still = []
            for st, res in zip(pending, results):
                st.calls += 1
                st.attempts += 0 if res.cached else res.attempts
                st.retries += attempt > 0
                st.prompt_tokens += res.prompt_tokens
                st.completion_tokens += res.completion_tokens
                if self.released_replies and res.error is None:
                    self._read_released(st, kind, res)
                    continue
                try:
                    obj, salvaged = reply_object(res, ("knowledge_fragments",) if kind != "ner" else ())
                    if kind == "ner":
                        st.entities = ner_prompt.parse(obj)
                    else:
                        ext = extraction_prompt.parse(obj)
                        if not ext.fragments:
                            raise PromptParseError("no knowledge fragments in the reply")
                        st.extraction = ext
                    st.salvaged = st.salvaged or salvaged
                except (PromptParseError, ValueError, TypeError) as exc:
                    st.errors.append(f"{kind} attempt {attempt + 1}: {exc}"[:300])
                    still.append(st)
            pending = still

    @staticmethod
    def _read_released(st: _State, kind: str, res: ChatResult) -> None:
        """A reply read as the released code reads it; an unreadable one is empty and counted."""
        truncated = res.finish_reason == "length"
        if kind == "ner":
            ner = read_ner(res.text, truncated)
            st.entities = ner.entities
            if ner.fallback:
                st.fallbacks["ner"] = ner.fallback
            return
        ext = read_extraction(res.text, truncated)
        st.extraction = extraction_prompt.Extraction(
            triples=ext.triples, fragments=ext.fragments, fragment_entities=ext.fragment_entities,
            aligned=True, dropped_triples=ext.dropped_triples)
        st.padded = ext.padded or ext.truncated_lists or bool(ext.malformed_entity_lists)
        if ext.fallback:
            st.fallbacks["extraction"] = ext.fallback

    # ----------------------------------------------------------------- records
    def _record(self, st: _State) -> dict[str, Any]:
        base = {"chunk_id": st.chunk.id, "llm_calls": st.calls, "llm_attempts": st.attempts,
                "prompt_tokens": st.prompt_tokens, "completion_tokens": st.completion_tokens,
                "retries": st.retries}
        if st.entities is None or st.extraction is None:
            stage = "ner" if st.entities is None else "extraction"
            return {**base, "status": "failed", "stage": stage, "reason": "; ".join(st.errors[-2:])}
        ext = st.extraction
        repaired = not ext.aligned
        frag_ents = ext.fragment_entities
        if repaired:
            cands = dedupe_keep_order(
                list(st.entities) + [x for t in ext.triples for x in (t[0], t[2])] + ext.stray_entities)
            frag_ents = repair_alignment(ext.fragments, cands)
        return {**base, "status": "ok", "entities": st.entities, "triples": [list(t) for t in ext.triples],
                "fragments": ext.fragments, "fragment_entities": frag_ents, "repaired_alignment": repaired,
                "salvaged": st.salvaged, "dropped_triples": ext.dropped_triples,
                **({"released_fallbacks": st.fallbacks, "positional_alignment": st.padded}
                   if self.released_replies else {})}

    def _run_batch(self, chunks: list[Chunk]) -> list[dict[str, Any]]:
        states = [_State(c) for c in chunks]
        self._phase(states, "ner")
        self._phase([s for s in states if s.entities is not None], "extraction")
        return [self._record(s) for s in states]

    # ----------------------------------------------------------------- main
    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        check_chunks(chunks)
        t0 = time.perf_counter()
        ckpt = ChunkCheckpoint(self.checkpoint_path)
        todo = [c for c in chunks if not ckpt.done(c.id)]
        resumed = len(chunks) - len(todo)
        if resumed:
            log.info("llm atomizer: resuming, %d of %d chunks already done", resumed, len(chunks))
        calls_this_run = 0
        failed = 0
        limit = self.cfg.max_chunk_failures_frac * len(chunks)
        bar = pbar(total=len(chunks), desc="llm atoms", enabled=self.progress)
        bar.update(resumed)
        try:
            for batch in batched(todo, self.batch_size):
                records = self._run_batch(batch)
                ckpt.append(records)  # persisted before anything else can go wrong
                calls_this_run += sum(r["llm_calls"] for r in records)
                failed += sum(r["status"] != "ok" for r in records)
                bar.update(len(batch))
                if failed > limit:
                    first = next((r["reason"] for r in records if r["status"] != "ok"), "")
                    raise RuntimeError(
                        f"llm atomizer: {failed} of {len(chunks)} chunks failed, more than "
                        f"atomizer.max_chunk_failures_frac={self.cfg.max_chunk_failures_frac} of them; is the LLM "
                        f"server reachable and serving model {getattr(self.llm, 'model', '?')!r}? Last error: "
                        f"{first[:300]}. Finished chunks are kept in {self.checkpoint_path or '(no checkpoint)'}; "
                        f"re-run to retry only the failed ones"
                    )
        finally:
            bar.close()
        result = self.assemble(chunks, ckpt.records)
        result.stats.update({"resumed_chunks": resumed, "llm_calls_this_run": calls_this_run,
                             "llm_s": round(time.perf_counter() - t0, 3),
                             "checkpoint_torn_lines": ckpt.torn_lines})
        if result.failures:
            log.warning("llm atomizer: %d of %d chunks failed (see AtomizeResult.failures)",
                        len(result.failures), len(chunks))
        return result

    def assemble(self, chunks: list[Chunk], records: dict[str, dict[str, Any]]) -> AtomizeResult:
        """Atoms, triples and failures of ``chunks`` (in chunk order) from their records."""
        atoms: list[Atom] = []
        triples: list[Triple] = []
        failures: list[ChunkFailure] = []
        counts = {"repaired_alignment": 0, "salvaged": 0, "dropped_triples": 0, "retries": 0,
                  "llm_attempts": 0, "prompt_tokens": 0, "completion_tokens": 0}
        if self.released_replies:  # replies read as empty the released way, and lists aligned by position
            counts.update({"released_fallback_ner": 0, "released_fallback_extraction": 0,
                           "positional_alignment": 0})
        calls = 0
        for c in chunks:
            r = records[c.id]
            calls += r["llm_calls"]
            counts["retries"] += r.get("retries", 0)
            counts["llm_attempts"] += r.get("llm_attempts", 0)
            counts["prompt_tokens"] += r.get("prompt_tokens", 0)
            counts["completion_tokens"] += r.get("completion_tokens", 0)
            if r["status"] != "ok":
                failures.append(ChunkFailure(chunk_id=c.id, stage=r["stage"], reason=r["reason"]))
                continue
            counts["repaired_alignment"] += bool(r["repaired_alignment"])
            counts["salvaged"] += bool(r["salvaged"])
            counts["dropped_triples"] += r["dropped_triples"]
            if self.released_replies:
                fb = r.get("released_fallbacks") or {}
                counts["released_fallback_ner"] += "ner" in fb
                counts["released_fallback_extraction"] += "extraction" in fb
                counts["positional_alignment"] += bool(r.get("positional_alignment"))
            if self.cfg.atom_unit == "chunks":  # "w/o KA": the chunk is the node, entities kept
                ents = dedupe_keep_order([e for fe in r["fragment_entities"] for e in fe] + list(r.get("entities") or []))
                atoms.append(Atom(id=atom_id(c.id, 0), text=c.text, chunk_id=c.id, passage_id=c.passage_id,
                                  entities=ents, span=(0, len(c.text))))
            else:
                for j, (text, ents) in enumerate(zip(r["fragments"], r["fragment_entities"])):
                    atoms.append(Atom(id=atom_id(c.id, j), text=text, chunk_id=c.id, passage_id=c.passage_id,
                                      entities=list(ents), span=find_span(c.text, text)))
            triples.extend(Triple(s, p, o, chunk_id=c.id) for s, p, o in r["triples"])
        stats = {"atomizer": self.name, "chunks": len(chunks), "atoms": len(atoms), "triples": len(triples),
                 "failed_chunks": len(failures), **counts}
        return AtomizeResult(atoms=atoms, triples=triples, failures=failures, llm_calls=calls, stats=stats)
