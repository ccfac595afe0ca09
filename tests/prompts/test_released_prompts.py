"""fidelity.prompts=released: the released templates are parsed from a checkout, never imported.

Every test but ``test_real_checkout_parses`` uses the synthetic tree of ``released_tree``
(invented texts). That one reads the real checkout at ``../shared/released_code/AtomicRAG`` (or
``ATOMICRAG_RELEASED_CODE``), skipping only where neither exists; it prints counts, hashes and
placeholder names, never a text. ``test_released_render.py`` compares renderings byte for byte.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from atomicrag.core.config_query import FidelityConfig
from atomicrag.prompts import decompose, extraction, judge, ner, reader, released
from atomicrag.prompts.released_parse import ReleasedParseError
from tests.prompts.released_tree import make_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    released.load.cache_clear()
    return make_tree(tmp_path / "AtomicRAG")


def test_parses_every_template_the_pipeline_needs(tree: Path) -> None:
    p = released.require(str(tree))
    assert set(p.chats) == set(released.CHAT_TEMPLATES)
    ner_msgs = p.ner("PASSAGE X")
    assert [m["role"] for m in ner_msgs] == ["system", "user", "assistant", "user"]
    assert ner_msgs[0]["content"].startswith("SYN-NER-SYSTEM") and ner_msgs[-1]["content"] == "PASSAGE X"
    ext = p.extraction("PASSAGE Y", ["Ent"])
    # the one-shot input is the frame formatted with the sibling file's constants (a cross-file import)
    assert "SYN paragraph about Oslo." in ext[1]["content"] and "{passage}" not in ext[1]["content"]
    # the last turn is the frame converted to ${...} and then filled
    assert ext[-1]["content"] == 'SYN-FRAME passage:\nPASSAGE Y\n\n{"named_entities": ["Ent"]}\n'
    assert p.decomposition("Why?", 3)[0]["content"] == "SYN-ANALYSIS at most 3 parts of: Why? costs $5"
    qa = p.reader("precise", "CTX")
    assert qa[1]["content"].startswith("Wikipedia Title: SYN doc one") and qa[-1]["content"] == "CTX"
    assert p.reader("abstract", "CTX")[0]["content"].startswith("SYN-ABSTRACT")


def test_judge_prompts_and_examples_block(tree: Path) -> None:
    p = released.require(str(tree))
    [m] = p.judge_statements("Q?", "ANS")
    assert m["role"] == "user" and "split ANS for Q? into" in m["content"]
    [c] = p.judge_classify("Q?", ["a 1"], ["g 1"])
    assert 'In: {"question": "SYN q?"' in c["content"] and '\nOut: {"TP": []}' in c["content"]
    assert 'answer: ["a 1"] truth: ["g 1"]' in c["content"]


def test_hashes_cover_every_template_and_change_with_the_text(tree: Path) -> None:
    h1 = released.require(str(tree)).hashes()
    assert set(h1) == set(released.CHAT_TEMPLATES) | {"judge.statements", "judge.classify", "judge.examples",
                                                      "instruction.query_to_passage", "instruction.query_to_node"}
    f = tree / "atomicrag/prompts/templates/ner.py"
    f.write_text(f.read_text().replace("SYN-NER-SYSTEM", "SYN-NER-SYSTEM2"))
    released.load.cache_clear()
    h2 = released.require(str(tree)).hashes()
    assert h2["ner"] != h1["ner"] and h2["rag_qa_precise"] == h1["rag_qa_precise"]


def test_embedding_instructions_come_from_the_checkout(tree: Path) -> None:
    """embedder.embed_instruction=released: the texts are the checkout's (nothing copied here), and
    without a checkout the switch stops with how to get one."""
    from atomicrag.core.config import EmbedderConfig
    from atomicrag.embed import factory

    fid = FidelityConfig(prompts="released", released_code=str(tree))
    bge = EmbedderConfig(name="transformers", model="BAAI/bge-large-en-v1.5", embed_instruction="released")
    assert released.instruction(fid, "query_to_passage") == "SYN-QUERY-TO-PASSAGE: "
    assert released.instruction(fid, "query_to_node") == "SYN-QUERY-TO-NODE: "
    seen = []
    orig = factory._build
    try:
        factory._build = lambda key, pooling: seen.append(dict(key)) or object()
        factory.build_embedder(bge, fid)
        with pytest.raises(released.ReleasedCodeMissing, match="fidelity.released_code"):
            factory.build_embedder(bge, FidelityConfig(prompts="released", released_code=str(tree / "nope")))
    finally:
        factory._build = orig
    assert seen[0]["query_prefix"] == "SYN-QUERY-TO-PASSAGE: "
    # own prompts: the embedder's own query prefix stands in (nothing of the checkout is read)
    own = FidelityConfig(prompts="own", released_code=str(tree / "nope"))
    assert released.instruction(own, "query_to_passage") is None


def test_the_checkout_is_never_imported(tree: Path) -> None:
    # a template that would run code on import: parsing must neither run it nor accept it
    bad = tree / "atomicrag/prompts/templates/ner.py"
    marker = tree / "ran"
    bad.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
                   "prompt_template = str(pathlib.Path('.'))\n")
    with pytest.raises(ReleasedParseError):
        released.require(str(tree))
    assert not marker.exists()
    assert not any("templates.ner" in name for name in sys.modules)


def test_a_missing_checkout_stops_with_how_to_get_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(released.ENV_VAR, raising=False)
    with pytest.raises(released.ReleasedCodeMissing, match="git clone .*fidelity.prompts=own"):
        released.for_fidelity(FidelityConfig(prompts="released"))
    with pytest.raises(released.ReleasedCodeMissing, match="not a checkout"):
        released.require(str(tmp_path))
    assert released.for_fidelity(FidelityConfig()) is None  # own prompts need nothing


def test_env_var_names_the_checkout(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(released.ENV_VAR, str(tree))
    assert released.for_fidelity(FidelityConfig(prompts="released")).root == str(tree.resolve())


def test_prompt_modules_send_the_released_templates(tree: Path) -> None:
    p = released.require(str(tree))
    assert ner.build_messages("text", "Title", p)[-1]["content"] == "Title\ntext"
    assert extraction.build_messages("text", ["E"], "", p)[0]["content"].startswith("SYN-EXTRACT-SYSTEM")
    d = decompose.build_messages("Q?", max_sub_questions=4, threshold=6.5, trigger="score_and_flag", released=p)
    assert d[0]["content"].startswith("SYN-ANALYSIS at most 4")
    r = reader.build_messages("precise", "Who?", ["atom one", "atom two"], "wikipedia_title", p)
    # the released layout: one "Wikipedia Title:" block per atom, then the question
    assert r[-1]["content"] == "Wikipedia Title: atom one\n\nWikipedia Title: atom two\n\nQuestion: Who?\nThought: "
    assert r[0]["content"].startswith("SYN-PRECISE-SYSTEM")
    assert "SYN-STATEMENTS" in judge.build_statement_messages("q", "t", p)[0]["content"]
    assert "SYN-CORRECTNESS" in judge.build_classify_messages("q", ["a"], ["b"], p)[0]["content"]
    # own prompts by default
    assert "SYN" not in json.dumps(ner.build_messages("text") + judge.build_statement_messages("q", "t"))


def test_replies_keep_their_schemas(tree: Path) -> None:
    """Structured output works with the released prompts: their JSON answers fit our schemas."""
    demo = released.require(str(tree)).chats["unified_triple_knowledge_fragment_extraction"][2]["content"]
    out = json.loads(demo)
    assert set(out) <= set(extraction.SCHEMA["properties"])


def test_real_checkout_parses() -> None:
    """The real checkout (../shared/released_code/AtomicRAG, else $ATOMICRAG_RELEASED_CODE): every
    template, judge prompt, instruction and the sieve prompt parse from it."""
    from atomicrag.prompts import released_sieve
    from tests.prompts.released_checkout import require_checkout

    root = require_checkout()
    released.load.cache_clear()
    p = released.require(str(root))
    sieve = released_sieve.load(str(root))
    assert sieve.max_tokens == 1024 and len(sieve.examples) == 2
    assert all("{" + f + "}" in sieve.input_frame for f in released_sieve.INPUT_FIELDS)
    assert set(p.instructions) == set(released.LINKING_KEYS) and all(p.instructions.values())
    summary = {name: {"messages": len(msgs), "roles": "".join(m["role"][0] for m in msgs),
                      "placeholders": sorted(set().union(*(released.placeholders(m["content"]) for m in msgs)))}
               for name, msgs in p.chats.items()}
    print(json.dumps({"templates": summary, "hashes": p.hashes()}, indent=1))
    assert summary["ner"]["placeholders"] == ["passage"]
    assert summary["rag_qa_abstract"]["placeholders"] == ["prompt_user"]
    assert summary["question_analysis"]["placeholders"] == ["max_sub_questions", "question"]
    # every template renders with the fields the pipeline fills
    assert p.ner("x") and p.extraction("x", ["y"]) and p.decomposition("q", 5) and p.reader("precise", "c")
    assert p.judge_statements("q", "a") and p.judge_classify("q", ["a"], ["b"])


def test_published_row_without_a_checkout_stops_before_any_work(tmp_path: Path) -> None:
    """The entry point on a published row: no checkout named -> exit 2 with the message, no run folder."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != released.ENV_VAR}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [sys.executable, "-m", "atomicrag.run", "+experiment=table1/medical_atomicrag", "dataset=medical_smoke",
         "judge=run", "llm=vllm_cpu_qwen05b", f"paths.results_dir={tmp_path / 'results'}",
         f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / 'hydra'}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "No checkout of the released code is named" in proc.stderr and "fidelity.prompts=own" in proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists()


def test_the_released_decomposition_renders_the_question_as_given(tree: Path) -> None:
    """Two 2Wiki smoke questions end in a space; the released call renders them as they are, so our
    request differed from the released code's for those questions while we stripped it (the parity
    run's decompose stage: 8 of 10 bodies equal). Our own template still strips."""
    p = released.require(str(tree))
    d = decompose.build_messages("Who is older, A or B? ", max_sub_questions=3, threshold=6.5, released=p)
    assert "B? " in d[0]["content"]
    own = decompose.build_messages("Who is older, A or B? ", max_sub_questions=3, threshold=6.5)
    assert "B? " not in own[0]["content"] and "B?" in own[0]["content"]
