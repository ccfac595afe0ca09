"""The released code's prompts, read at run time from a checkout the user names (``fidelity.prompts``).

``fidelity.prompts=released`` makes every LLM stage that has a released template send it: passage
and query NER (``ner``; the released code reuses the passage prompt for queries), the unified
triple + fragment extraction, the question analysis (decomposition), both readers
(``rag_qa_precise`` / ``rag_qa_abstract``) and the judge's two prompts with its few-shot block
(``Evaluation/metrics/answer_accuracy.py``). The sieve's released prompt is built inside a class
method, not a template file: ``released_sieve`` reads it from that method's source
(``sieve.sieve_prompt=released``).

The texts are never copied into this project: ``load`` parses the checkout (``released_parse``)
and keeps the placeholders (``${passage}`` etc.), which are filled with ``string.Template``
exactly as the released template manager does. metrics.json records the checkout path and a
hash per template (``ReleasedPrompts.hashes``).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from atomicrag.core.config_query import FidelityConfig
from atomicrag.prompts.released_parse import ModuleConstants, ReleasedParseError, find_assignment

ENV_VAR = "ATOMICRAG_RELEASED_CODE"
TEMPLATES_DIR = Path("atomicrag/prompts/templates")
JUDGE_FILE = Path("Evaluation/metrics/answer_accuracy.py")
# the embedding instructions: a dict inside a function of this file (embedder.embed_instruction=released)
LINKING_FILE = Path("atomicrag/prompts/linking.py")
LINKING_FUNCTION, LINKING_DICT = "get_query_instruction", "instructions"
LINKING_KEYS = ("query_to_passage", "query_to_node")  # what the released retrieval asks for
# template file -> the placeholders the pipeline fills (a checkout whose template lacks one fails)
CHAT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "ner": ("passage",),
    "unified_triple_knowledge_fragment_extraction": ("passage", "named_entity_json"),
    "question_analysis": ("question", "max_sub_questions"),
    "rag_qa_precise": ("prompt_user",),
    "rag_qa_abstract": ("prompt_user",),
}
JUDGE_STATEMENTS = "STATEMENT_GENERATOR_PROMPT"
JUDGE_CLASSIFY = "CORRECTNESS_PROMPT_TEMPLATE"
JUDGE_EXAMPLES = "CORRECTNESS_EXAMPLES"

HOW_TO_GET = (
    "The published rows send the released code's prompts (fidelity.prompts=released), read from a "
    "checkout of github.com/7HHHHH/AtomicRAG: `git clone https://github.com/7HHHHH/AtomicRAG` and pass "
    f"fidelity.released_code=/path/to/AtomicRAG (or set {ENV_VAR}). To run with this project's own "
    "prompts instead, pass fidelity.prompts=own; every cell of such a run is then marked 'own prompts'."
)


class ReleasedCodeMissing(RuntimeError):
    """``fidelity.prompts=released`` without a usable checkout."""


@dataclass(frozen=True)
class ReleasedPrompts:
    root: str
    chats: dict[str, list[dict[str, str]]]  # name -> [{"role", "content" with ${...}}]
    judge: dict[str, str] = field(default_factory=dict)  # statements / classify (str.format fields) / examples
    instructions: dict[str, str] = field(default_factory=dict)  # linking method -> embedding instruction

    def render(self, name: str, **values: Any) -> list[dict[str, str]]:
        """Fill a chat template as the released manager does (``Template.substitute`` per message)."""
        return [{"role": m["role"], "content": Template(m["content"]).substitute(**values)}
                for m in self.chats[name]]

    def ner(self, passage: str) -> list[dict[str, str]]:
        return self.render("ner", passage=passage)

    def extraction(self, passage: str, entities: list[str]) -> list[dict[str, str]]:
        return self.render("unified_triple_knowledge_fragment_extraction", passage=passage,
                           named_entity_json=json.dumps({"named_entities": entities}))

    def decomposition(self, question: str, max_sub_questions: int) -> list[dict[str, str]]:
        # the released call passes question_type too; its template has no such field
        return self.render("question_analysis", question=question, max_sub_questions=max_sub_questions,
                           question_type="Unknown")

    def reader(self, kind: str, prompt_user: str) -> list[dict[str, str]]:
        return self.render(f"rag_qa_{kind}", prompt_user=prompt_user)

    def judge_statements(self, question: str, text: str) -> list[dict[str, str]]:
        # the released judge sends one string, which LangChain wraps as a single user message
        return [{"role": "user", "content": self.judge["statements"].format(question=question, answer=text)}]

    def judge_classify(self, question: str, answer: list[str], reference: list[str]) -> list[dict[str, str]]:
        content = self.judge["classify"].format(examples=self.judge["examples"], question=question,
                                                answer=json.dumps(answer), ground_truth=json.dumps(reference))
        return [{"role": "user", "content": content}]

    def hashes(self) -> dict[str, str]:
        """sha256 (first 16 hex digits) of each template as parsed, placeholders unfilled."""
        out = {name: _digest(msgs) for name, msgs in sorted(self.chats.items())}
        out.update({f"judge.{k}": _digest(v) for k, v in sorted(self.judge.items())})
        out.update({f"instruction.{k}": _digest(v) for k, v in sorted(self.instructions.items())})
        return out


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def checkout_path(configured: str | None) -> Path | None:
    """The checkout to read: the configured path, else the environment variable, else None."""
    raw = configured or os.environ.get(ENV_VAR) or ""
    return Path(raw).expanduser() if raw.strip() else None


def require(configured: str | None) -> ReleasedPrompts:
    """Load the named checkout, or stop with the message that says how to get one."""
    root = checkout_path(configured)
    if root is None:
        raise ReleasedCodeMissing(f"No checkout of the released code is named. {HOW_TO_GET}")
    if not (root / TEMPLATES_DIR).is_dir() or not (root / JUDGE_FILE).is_file():
        raise ReleasedCodeMissing(f"{root} is not a checkout of the released code (it lacks "
                                  f"{TEMPLATES_DIR} or {JUDGE_FILE}). {HOW_TO_GET}")
    return load(str(root.resolve()))


@lru_cache(maxsize=4)
def load(root: str) -> ReleasedPrompts:
    """Parse every template the pipeline needs (``ReleasedParseError`` on anything unexpected)."""
    base = Path(root)
    tdir = base / TEMPLATES_DIR
    siblings = {p.stem: p for p in tdir.glob("*.py") if p.stem != "__init__"}
    chats: dict[str, list[dict[str, str]]] = {}
    for name, fields in CHAT_TEMPLATES.items():
        if name not in siblings:
            raise ReleasedParseError(f"{tdir}: no template file {name}.py")
        value = ModuleConstants(siblings[name], siblings).get("prompt_template")
        msgs = [{"role": "user", "content": value}] if isinstance(value, str) else value
        if not (isinstance(msgs, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str)
                                               and m.get("role") in ("system", "user", "assistant")
                                               for m in msgs)):
            raise ReleasedParseError(f"{siblings[name]}: prompt_template is neither a string nor a chat list")
        msgs = [{"role": m["role"], "content": m["content"]} for m in msgs]
        missing = [f for f in fields if not any(f in placeholders(m["content"]) for m in msgs)]
        if missing:
            raise ReleasedParseError(f"{siblings[name]}: no placeholder for {', '.join(missing)}")
        chats[name] = msgs
    jm = ModuleConstants(base / JUDGE_FILE)
    examples_expr = find_assignment(jm.function("calculate_factuality"), "examples")
    judge = {"statements": jm.get(JUDGE_STATEMENTS), "classify": jm.get(JUDGE_CLASSIFY),
             "examples": jm.resolve(examples_expr, {})}
    for key, fields_ in (("statements", ("question", "answer")),
                         ("classify", ("examples", "question", "answer", "ground_truth"))):
        text = judge[key]
        if not isinstance(text, str) or any("{" + f + "}" not in text for f in fields_):
            raise ReleasedParseError(f"{base / JUDGE_FILE}: the {key} prompt lacks one of {fields_}")
    lm = ModuleConstants(base / LINKING_FILE)
    instructions = lm.resolve(find_assignment(lm.function(LINKING_FUNCTION), LINKING_DICT), {})
    if not (isinstance(instructions, dict) and all(isinstance(instructions.get(k), str) for k in LINKING_KEYS)):
        raise ReleasedParseError(f"{base / LINKING_FILE}: {LINKING_DICT} lacks one of {LINKING_KEYS}")
    return ReleasedPrompts(root=root, chats=chats, judge=judge,
                           instructions={k: instructions[k] for k in LINKING_KEYS})


def placeholders(text: str) -> set[str]:
    """``${name}`` / ``$name`` fields of a Template text."""
    return {m.group("named") or m.group("braced") for m in Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")}


def for_fidelity(fidelity: FidelityConfig) -> ReleasedPrompts | None:
    """The released prompts when ``fidelity.prompts == "released"``, else None (own prompts)."""
    if fidelity.prompts != "released":
        return None
    return require(fidelity.released_code)


def instruction(fidelity: FidelityConfig, linking: str) -> str | None:
    """The released embedding instruction for ``linking`` (``query_to_passage``/``query_to_node``),
    read from the named checkout, when the run sends the released prompts; None under own prompts
    (the embedder's own query prefix then stands in, placed as the released code places it)."""
    prompts = for_fidelity(fidelity)
    return None if prompts is None else prompts.instructions[linking]
