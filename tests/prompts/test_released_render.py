"""The released prompts as this project renders them equal, byte for byte, what the released code
renders itself, on the real checkout (``../shared/released_code/AtomicRAG``; skipped only where
absent).

The released side runs in a subprocess of a plain ``python3 -I`` that imports only the checkout's
prompt files (``released_render_probe.py``; the third-party imports it does not need are stubbed
there). This side parses the same checkout with ``ast`` and never imports it. The inputs carry the
characters a template engine can trip on: ``$``, braces, newlines and non-ASCII text.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from atomicrag.prompts import released, released_sieve
from tests.prompts.released_checkout import require_checkout

INPUTS = {
    "passage": "Zoë's $5 {price} and ${passage}\nsecond line",
    "entities": ["Zoë", "$5", "{x}"],
    "question": "Who is {x} and $y, née Zoë?",
    "prompt_user": "Wikipedia Title: A $1\nB {c}\n\nQuestion: Q?\nThought: ",
    "answer": "It is Zoë.\nShe won {twice}.",
    "answer_statements": ["Zoë won.", "She won {twice}."],
    "reference_statements": ["Zoë won in 1999."],
    "fragments": ["Zoë won.", "The price was $5 {x}.", "Line\nbreak"],
    # replies read by both sides' parsers
    "sieve_n": 4,
    "sieve_replies": [
        '[[ ## kept_fragment_ids ## ]]\n{"keep_indices": [3, 1, 3, 9, -1]}\n\n[[ ## completed ## ]]',
        "[[ ## kept_fragment_ids ## ]]\n{'keep_indices': ['2', 1.0, True]}",
        '[[ ## kept_fragment_ids ## ]] {"keep_indices": [1]}',
        '[[ ## kept_fragment_ids ## ]]\n{"keep_indices": [1.5]}',
        '[[ ## kept_fragment_ids ## ]]\n[1, 2]',
        '[[ ## kept_fragment_ids ## ]]\n{"keep_indices": []}',
        "  [[ ## kept_fragment_ids ## ]]  \n{\"keep_indices\": [0], \"extra\": 1}\n[[ ## kept_fragment_ids ## ]]\n[2]",
        "I would keep 0 and 2.",
        "",
    ],
    "threshold": 6.5,
    "decompose_replies": [
        '{"needs_decomposition": true, "complexity_score": 8, "sub_questions": ['
        '{"question": ""}, "skip", {"id": 7, "question": " Who? "}, {"question": "Who?"}]}',
        'Sure.\n```json\n{"needs_decomposition": true, "complexity_score": 7.5, "sub_questions": '
        '[{"question": "A?"}, {"question": "A?"}]}\n```',
        'Answer: {"needs_decomposition": true, "complexity_score": 5, "sub_questions": [{"question": "B?"}]}',
        '{"needs_decomposition": "yes", "complexity_score": "9", "sub_questions": [{"question": "C?"}]}',
        '{"needs_decomposition": true, "complexity_score": 9, "sub_questions": []}',
        "no json here",
    ],
}
PROBE = Path(__file__).with_name("released_render_probe.py")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    root = require_checkout()
    python = shutil.which("python3") or sys.executable
    inputs = tmp_path_factory.mktemp("probe") / "inputs.json"
    inputs.write_text(json.dumps(INPUTS), encoding="utf-8")
    proc = subprocess.run([python, "-I", str(PROBE), str(root), str(inputs)], capture_output=True,
                          text=True, timeout=120, cwd=inputs.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), root


def ours(root: Path) -> dict:
    released.load.cache_clear()
    p = released.load(str(root))
    sieve = released_sieve.load(str(root))
    return {
        "ner": p.ner(INPUTS["passage"]),
        "extraction": p.extraction(INPUTS["passage"], INPUTS["entities"]),
        # the released decomposer wraps its one rendered string as a single user message
        "decomposition": p.decomposition(INPUTS["question"], 3)[0]["content"],
        "reader_precise": p.reader("precise", INPUTS["prompt_user"]),
        "reader_abstract": p.reader("abstract", INPUTS["prompt_user"]),
        "instructions": p.instructions,
        "judge_statements": p.judge_statements(INPUTS["question"], INPUTS["answer"])[0]["content"],
        "judge_classify": p.judge_classify(INPUTS["question"], INPUTS["answer_statements"],
                                           INPUTS["reference_statements"])[0]["content"],
        "sieve": sieve.messages(INPUTS["question"], INPUTS["fragments"]),
        "sieve_max_tokens": sieve.max_tokens,
    }


@pytest.mark.parametrize("name", ["ner", "extraction", "decomposition", "reader_precise", "reader_abstract",
                                  "instructions", "judge_statements", "judge_classify", "sieve",
                                  "sieve_max_tokens"])
def test_rendering_equals_the_released_code_byte_for_byte(rendered: tuple[dict, Path], name: str) -> None:
    theirs, root = rendered
    mine = ours(root)[name]
    assert json.dumps(mine, ensure_ascii=False) == json.dumps(theirs[name], ensure_ascii=False)


def test_the_probe_really_rendered_the_checkout(rendered: tuple[dict, Path]) -> None:
    """Guards the comparison against an empty probe: inputs appear in the released renderings."""
    theirs, _ = rendered
    assert theirs["ner"][-1]["content"] == INPUTS["passage"]
    assert INPUTS["question"] in theirs["decomposition"] and theirs["sieve_max_tokens"] == 1024
    assert len(theirs["sieve"]) == 6 and INPUTS["answer"] in theirs["judge_statements"]


def test_sieve_replies_are_read_as_the_released_parser_reads_them(rendered: tuple[dict, Path]) -> None:
    theirs, _ = rendered
    if "sieve_parses" not in theirs:
        pytest.skip("the probe's interpreter has no pydantic (the released validator)")
    mine = [released_sieve.parse_reply(r, INPUTS["sieve_n"]).keep for r in INPUTS["sieve_replies"]]
    assert mine == theirs["sieve_parses"]


def test_decomposition_replies_give_the_released_queries(rendered: tuple[dict, Path]) -> None:
    from atomicrag.core.config import DecomposeConfig, FidelityConfig
    from atomicrag.llm.protocol import ChatResult
    from atomicrag.retrieve.decompose import LLMDecomposer

    theirs, _ = rendered

    class Replies:
        model = "scripted"

        def chat(self, requests):
            return [ChatResult(text=r) for r in INPUTS["decompose_replies"]]

    cfg = DecomposeConfig(name="llm", complexity_threshold=INPUTS["threshold"], max_sub_questions=3)
    cfg = dataclasses.replace(cfg, decompose_trigger="score_and_flag", decompose_parse="released")
    outs = LLMDecomposer(Replies(), cfg, FidelityConfig()).decompose([INPUTS["question"]] * len(INPUTS["decompose_replies"]))
    assert [o.queries for o in outs] == theirs["decompositions"]
