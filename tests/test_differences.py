"""Issue 19, item 9: each run names its differences from the released pipeline; tables say them."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from atomicrag.core.compose import group_config
from atomicrag.core.config_query import FidelityConfig
from atomicrag.harness.config import HarnessConfig
from atomicrag.harness.differences import differences, footnote, released_config, switches
from atomicrag.harness.report_tables.render import to_markdown
from atomicrag.harness.report_tables.runs import load_runs, overall
from atomicrag.harness.report_tables.table import Column, Row, TableSpec, build
from tests.test_make_tables import write_run


def _topics(cfg: HarnessConfig) -> dict[str, dict]:
    return {d["topic"]: d for d in differences(cfg)}


def released(**changes: dict) -> HarnessConfig:
    """A harness config whose every fidelity switch (in ``fidelity`` and in the stage sections) has
    its ``fidelity=reference_code`` value, then ``changes``: ``{section: {field: value}}``."""
    ref, cfg = released_config(), HarnessConfig()
    for section, name in switches():
        setattr(getattr(cfg, section), name, getattr(getattr(ref, section), name))
    for section, values in changes.items():
        setattr(cfg, section, dataclasses.replace(getattr(cfg, section), **values))
    return cfg


SWITCH_TOPICS = {f"{section}.{name}" for section, name in switches()}


def test_a_reference_code_run_lists_only_what_is_left():
    cfg = released(reader={"max_tokens": 256}, decompose={"name": "llm"})
    t = _topics(cfg)
    assert not SWITCH_TOPICS & set(t)  # every switch at its released value
    assert t["prompts"]["ours"].startswith("this project's own wording")
    # the released run script passes max_new_tokens=None: no call but the sieve is capped; the
    # reference_code preset sends none either (fidelity.budgets=released), its own budgets list it
    assert "budget: reader max_tokens" not in t
    own = _topics(released(reader={"max_tokens": 256}, decompose={"name": "llm"}, fidelity={"budgets": "own"}))
    assert own["budget: reader max_tokens"] == {"topic": "budget: reader max_tokens", "ours": 256,
                                                "released": "none (no cap sent)"}
    assert "corpus chunks" in t and "questions" in t and "generator" in t
    t2 = _topics(released(fidelity={"prompts": "released"}, reader={"max_tokens": 2048}))
    assert "prompts" not in t2 and "budget: reader max_tokens" not in t2  # budgets=released: no cap sent


def test_paper_fidelity_names_every_switch():
    t = _topics(HarnessConfig(fidelity=FidelityConfig()))
    assert t["retriever.damping_semantics"]["ours"] == "restart" and t["retriever.damping_semantics"]["released"] == "continue"
    assert t["retriever.ppr_solve"]["released"] == "exact"


def test_footnote_names_rows_and_cells_say_own_prompts(tmp_path: Path):
    diffs = {"A": [{"topic": "generator", "ours": "qwen", "released": "gpt-4o-mini"}],
             "B": [{"topic": "generator", "ours": "qwen", "released": "gpt-4o-mini"},
                   {"topic": "prompts", "ours": "own", "released": "released templates"}]}
    assert footnote(diffs) == ["generator: qwen (released: gpt-4o-mini) — all rows",
                               "prompts: own (released: released templates) — B"]
    preds = [{"question_id": f"q{i}", "f1": 0.5} for i in range(10)]
    for label, prompts in (("Own", "own"), ("Rel", "released")):
        path = write_run(tmp_path, "tx", "dsa", label, {"retriever.name": label}, predictions=preds)
        cfg = yaml.safe_load((path / "config.yaml").read_text())
        cfg["fidelity"]["prompts"] = prompts
        (path / "config.yaml").write_text(yaml.safe_dump(cfg))
        m = json.loads((path / "metrics.json").read_text())
        m["differences"] = diffs["B" if prompts == "own" else "A"]
        (path / "metrics.json").write_text(json.dumps(m))
    spec = TableSpec("tx", "t", None, ("tx",), [Row("Own", {"retriever.name": "Own"}), Row("Rel", {"retriever.name": "Rel"})],
                     [Column("a", "A", extract=overall("f1"), dataset="dsa", published=False)], "F1", "F1")
    result = build(spec, load_runs(tmp_path), {}, {})
    md = to_markdown(result, tmp_path)
    assert "| Own | 50.0 [50.0, 50.0] n=10 ref own prompts |" in md
    assert "| Rel | 50.0 [50.0, 50.0] n=10 ref |" in md
    assert "Differences from the released pipeline: prompts: own (released: released templates) — Own" in md


def test_ner_budgets_below_the_released_ones_are_listed() -> None:
    """The passage NER (llm atomizer) and query NER calls get smaller completion budgets than the
    released 2048: a run that makes those calls lists both."""
    from atomicrag.harness.differences import differences

    cfg = HarnessConfig()
    cfg.atomizer.name, cfg.retriever.query_entities = "llm", "llm"
    topics = {d["topic"] for d in differences(cfg)}
    assert {"budget: passage NER max_tokens", "budget: query NER max_tokens"} <= topics
    cfg.atomizer.name, cfg.retriever.query_entities = "sentence", "spacy_cased"
    topics = {d["topic"] for d in differences(cfg)}
    assert not {"budget: passage NER max_tokens", "budget: query NER max_tokens"} & topics


def test_the_released_sieve_and_the_stages_without_a_switch_are_named() -> None:
    """Under reference_code with the released prompts the sieve is the released one (no 'sieve
    prompt' item, its timeout named), no seed is sent and entities are keyed as released (no 'seed' or
    'entity keys' item), every LLM stage reads free text as released (no 'structured output' item)
    and the entity lists are aligned by position (no 'fragment-entity alignment' item); synonym
    candidates and their overwriting of relevance edges are as released (no synonym item). With the structured replies back, the NER
    and extraction stages and the alignment are named again."""
    sieve = {"name": "llm", "max_tokens": 512}
    t = _topics(released(fidelity={"prompts": "released"}, sieve=sieve))
    assert "sieve prompt" not in t and "budget: sieve max_tokens" not in t and "sieve timeout" in t
    assert "synonym over relevance" not in t and "synonym candidates" not in t
    assert "structured output and retries" not in t and "fragment-entity alignment" not in t
    assert "seed" not in t and "entity keys" not in t
    assert not [k for k in t if k.startswith("budget: ")]  # nothing capped that the released code leaves uncapped
    structured = _topics(released(fidelity={"prompts": "released", "extraction_replies": "structured"}, sieve=sieve))
    assert structured["structured output and retries"]["ours"].startswith("JSON schemas (guided decoding) at passage NER, extraction;")
    assert "fragment-entity alignment" in structured
    own = _topics(released(fidelity={"prompts": "released"}, sieve={"name": "llm", "sieve_prompt": "own"}))
    assert own["sieve prompt"]["released"].startswith("released filter prompt") and "sieve.sieve_prompt" in own


def test_embedding_precision_and_concurrency_are_named_when_they_differ() -> None:
    """Two departures no switch covers, unnamed before: ``precision=auto`` embeds in fp16 on CUDA
    (bf16 on CPUs with native bf16) where the released class loads its model in the stored float32,
    and a concurrency other than the released 200 moves the latency columns."""
    auto = {"embed_precision": "config"}  # precision from embedder.precision (auto)
    t = _topics(released(embedder=auto))
    assert "embedding precision" in t and t["LLM concurrency"]["released"] == 200
    same = _topics(released(embedder={**auto, "precision": "fp32"}, llm={"concurrency": 200}))
    assert "embedding precision" not in same and "LLM concurrency" not in same
    # reference_code embeds in fp32 whatever embedder.precision says (embedder.embed_precision)
    assert "embedding precision" not in _topics(released())


def test_reference_code_embeds_in_fp32_as_the_released_class_loads_its_model(monkeypatch) -> None:
    """embedder.embed_precision=fp32 (reference_code): precision=auto would embed in bf16 on CPUs
    with native bf16 (fp16 on CUDA) and move seeds in the third decimal; the released class loads
    the checkpoint's float32."""
    from atomicrag.embed import factory

    built: list[dict] = []
    monkeypatch.setattr(factory, "_build", lambda key, pooling: built.append(dict(key)))
    ref = released_config()
    code = dataclasses.replace(ref.embedder, name="transformers", model="minilm", precision="auto")
    assert code.embed_precision == "fp32"
    factory.build_embedder(code, ref.fidelity)
    factory.build_embedder(dataclasses.replace(code, embed_precision="config"), ref.fidelity)
    assert [b["precision"] for b in built] == ["fp32", "auto"]


def test_a_run_that_asked_no_llm_lists_no_llm_difference() -> None:
    """A retrieval-only row (no reader, no decomposition, spaCy query entities) made no LLM call:
    prompts, seeds, schemas, budgets and the generator are not how it differs from the released
    pipeline, while its graph keys and embedder still are."""
    cfg = HarnessConfig(fidelity=FidelityConfig())
    asked = {d["topic"] for d in differences(cfg)}
    assert {"prompts", "seed", "structured output and retries", "generator"} <= asked
    assert any(t.startswith("budget: ") for t in asked)
    silent = {d["topic"] for d in differences(cfg, uses_llm=False)}
    assert not silent & {"prompts", "seed", "structured output and retries", "generator", "LLM concurrency"}
    assert not any(t.startswith("budget: ") for t in silent)
    assert {"entity keys", "embedder", "corpus chunks"} <= silent and "retriever.damping_semantics" in silent


def test_the_order_of_exactly_tied_ppr_scores_is_named() -> None:
    """No switch makes our ranking order exactly equal PPR scores as the released sort does (a
    scripted parity run found the two orders differ), so every row names it."""
    ref = group_config("fidelity", "reference_code")
    t = _topics(HarnessConfig(fidelity=dataclasses.replace(ref, prompts="released")))
    assert "torch.topk" in t["PPR score ties"]["ours"] and "argsort" in t["PPR score ties"]["released"]


def test_the_released_reader_and_query_ner_timeouts_are_named() -> None:
    """The released code bounds each reader task and each query-NER task by 60 s (an empty answer,
    no entities after it), as it does each sieve task; a row whose limits are off names both, and a
    row without an LLM reader or LLM query NER names neither."""
    t = _topics(released(retriever={"query_entities": "llm"}))
    assert '""' in t["reader timeout"]["released"] and "no entities" in t["query NER timeout"]["released"]
    plain = _topics(released(reader={"name": "none"}, retriever={"query_entities": "spacy"}))
    assert "reader timeout" not in plain and "query NER timeout" not in plain


def test_the_released_sieve_timeout_is_a_switch_named_only_when_it_differs() -> None:
    """``sieve.timeout_s``: reference_code sets the released 60 s, so its rows no longer name a sieve
    timeout; another value, no limit, or a backend that cannot honour the limit (in-process) is named
    with what ours does."""
    assert released_config().sieve.timeout_s == 60
    sieve = {"name": "llm", "timeout_s": 60}
    assert "sieve timeout" not in _topics(released(fidelity={"prompts": "released"}, sieve=sieve))
    t = _topics(released(fidelity={"prompts": "released"}, sieve={**sieve, "timeout_s": 6}))
    assert "sieve.timeout_s=6 s" in t["sieve timeout"]["ours"] and "60 s" in t["sieve timeout"]["released"]
    assert "none" in _topics(released(sieve={**sieve, "timeout_s": 0}))["sieve timeout"]["ours"]
    fake = _topics(released(sieve=sieve, llm={"name": "fake"}))
    assert "not honoured by the in-process fake backend" in fake["sieve timeout"]["ours"]
    assert "sieve timeout" not in _topics(released(sieve={"name": "none", "timeout_s": 0}))
    # the query NER's limit is its own switch
    t = _topics(released(sieve=sieve, retriever={"query_entities": "llm"}))
    assert "query NER timeout" in t and "sieve timeout" not in t


def test_the_released_reader_timeout_is_a_switch_named_only_when_it_differs() -> None:
    """``reader.timeout_s``: reference_code sets the released 60 s (an empty answer after it)."""
    assert released_config().reader.timeout_s == 60
    assert "reader timeout" not in _topics(released(reader={"timeout_s": 60}))
    t = _topics(released(reader={"timeout_s": 6}))
    assert "reader.timeout_s=6 s" in t["reader timeout"]["ours"] and '""' in t["reader timeout"]["released"]
    assert "none" in _topics(released(reader={"timeout_s": 0}))["reader timeout"]["ours"]
    fake = _topics(released(reader={"timeout_s": 60}, llm={"name": "fake"}))
    assert "not honoured by the in-process fake backend" in fake["reader timeout"]["ours"]


def test_the_released_query_ner_timeout_is_a_switch_named_only_when_it_differs() -> None:
    """``retriever.query_ner_timeout_s``: reference_code sets the released 60 s (no entities after it)."""
    assert released_config().retriever.query_ner_timeout_s == 60
    llm_ner = {"query_entities": "llm", "query_ner_timeout_s": 60}
    assert "query NER timeout" not in _topics(released(retriever=llm_ner))
    t = _topics(released(retriever={**llm_ner, "query_ner_timeout_s": 6}))
    assert ("retriever.query_ner_timeout_s=6 s" in t["query NER timeout"]["ours"]
            and "no entities" in t["query NER timeout"]["released"])
    assert "none" in _topics(released(retriever={**llm_ner, "query_ner_timeout_s": 0}))["query NER timeout"]["ours"]
    fake = _topics(released(retriever=llm_ner, llm={"name": "fake"}))
    assert "not honoured by the in-process fake backend" in fake["query NER timeout"]["ours"]
    assert "query NER timeout" not in _topics(released(retriever={**llm_ner, "query_entities": "spacy"}))
