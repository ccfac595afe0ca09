"""Reader prompts (paper §1 step 5, Appendix E "Figures 11 and 12").

Two readers share one layout: the model reasons after "Thought:" and gives its answer after
"Answer:". ``precise`` asks for the shortest exact answer (HotpotQA, 2Wiki, MuSiQue, scored by
EM/F1); ``abstract`` asks for a complete, self-contained answer (Graph-Bench Medical/Novel,
scored by answer accuracy). Free text, so ``SCHEMA`` is None.

Context lines carry their source, "[n] (Title) text" (the passage id when there is no title),
so the thought can cite evidence by number, and the trace's context list maps each number back to
its passage.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atomicrag.prompts.released import ReleasedPrompts

VERSION = "reader-v4"  # v4: a precise reply without "Answer:" gets a follow-up for the span (v3: layout-following instructions)
SCHEMA = None
KINDS = ("precise", "abstract")
ANSWER_MARKER = "Answer:"
THOUGHT_MARKER = "Thought:"

_COMMON = (
    "You answer questions using numbered evidence fragments. Each fragment starts with its "
    "number and its source in parentheses. Start after \"Thought:\" by reasoning step by step "
    "over the fragments, citing the numbers you rely on, e.g. [2]. If the fragments do not "
    "settle the question, say so in the thought and give your best-supported answer. "
)
# The same instructions for the released context layout ("Wikipedia Title: ..." blocks), which
# carries no numbers to cite: asking for [n] there made the model invent them.
_COMMON_BLOCKS = (
    "You answer questions using evidence fragments, each in its own block. Start after "
    "\"Thought:\" by reasoning step by step over the fragments, naming the facts you rely on. If "
    "the fragments do not settle the question, say so in the thought and give your best-supported "
    "answer. "
)
_TAIL = {
    "precise": (
        "Then write \"Answer:\" followed by the shortest exact answer: a name, date, number, "
        "place or yes/no, with no explanation, no citation and no full sentence."
    ),
    "abstract": (
        "Then write \"Answer:\" followed by a complete, self-contained answer in plain prose "
        "that covers every part of the question with the essential details from the evidence, "
        "without citation numbers."
    ),
}
TEMPLATE_BLOCKS: dict[str, str] = {k: _COMMON_BLOCKS + v.replace(", without citation numbers", "")
                                   for k, v in _TAIL.items()}
TEMPLATE: dict[str, str] = {k: _COMMON + v for k, v in _TAIL.items()}

USER_TEMPLATE = "{context}\n\nQuestion: {question}\nThought: "

# The precise reader's follow-up when a reply has no "Answer:" (``reader.answer_followup``).
# "continue": the reply is sent back as the assistant's turn, ending in the marker, and the model
# continues it; "ask" (backends that cannot continue a reply): a new user turn asks for the span.
# No yes/no in the list: naming it made a 0.5B model answer "Yes" to wh-questions.
FOLLOWUP_ASK = ("Now give only the shortest exact answer to the question (for example a name, a "
                "place, a date or a number), not a sentence.")


def followup_messages(messages: list[dict[str, str]], reply: str, mode: str) -> list[dict[str, str]]:
    """The chat that asks for the short answer after ``reply`` (which had no answer marker)."""
    if mode == "continue":
        return [*messages, {"role": "assistant", "content": f"{reply.rstrip()}\n{ANSWER_MARKER}"}]
    if mode == "ask":
        return [*messages, {"role": "assistant", "content": reply},
                {"role": "user", "content": FOLLOWUP_ASK}]
    raise ValueError(f"follow-up mode {mode!r} is not continue or ask")

# One demonstration per reader, written for this project (a two-hop question).
_EXAMPLE_CONTEXT = (
    "[1] (Rhine Falls) The Rhine Falls is a waterfall on the High Rhine in Switzerland.\n"
    "[2] (Rhine) The Rhine flows from the Swiss Alps to the North Sea.\n"
    "[3] (Switzerland) Bern is the federal city and de facto capital of Switzerland."
)
_EXAMPLE_QUESTION = "What is the capital of the country where the Rhine Falls are located?"
_EXAMPLE_THOUGHT = (
    "The Rhine Falls are in Switzerland [1]. The capital of Switzerland is Bern [3]."
)
_EXAMPLE_THOUGHT_BLOCKS = "The Rhine Falls are in Switzerland. The capital of Switzerland is Bern."
_EXAMPLE_ANSWER = {
    "precise": "Bern",
    "abstract": "The Rhine Falls are in Switzerland, whose capital (the federal city) is Bern.",
}


CONTEXT_STYLES = ("numbered", "wikipedia_title")


def format_context(items: Sequence[Any], style: str = "numbered") -> str:
    """Number context items for the prompt.

    Items are ``ContextItem`` objects from ``atomicrag.retrieve.merge`` (anything with ``text``
    and optionally ``title`` and ``passage_id``) or plain strings.
    ``style="wikipedia_title"`` (``reader.reader_context`` under ``reference_code``) writes each
    item as the released code does, ``"Wikipedia Title: {atom}"`` blocks separated by a blank line,
    with no number and no provenance.
    """
    if style not in CONTEXT_STYLES:
        raise ValueError(f"context style {style!r} is not one of {', '.join(CONTEXT_STYLES)}")
    if style == "wikipedia_title":
        return "\n\n".join(f"Wikipedia Title: {t}" for t in _texts(items))
    lines = []
    for n, item in enumerate(items, start=1):
        if isinstance(item, str):
            lines.append(f"[{n}] {item.strip()}")
            continue
        text = str(item.text).strip()
        title = (getattr(item, "title", "") or "").strip()
        # The source is the title, or the passage id when there is none: the number maps back to
        # the trace's context item (with its passage id), so ids cost the reader tokens for
        # nothing. A title the atom text already starts with (atomizer.title_context) is not
        # repeated: a "(Title / 2wiki-00004)" on each of 25 short atoms is a large share of the
        # prompt.
        if title and text.startswith(f"{title}:"):
            source = ""
        else:
            source = title or (getattr(item, "passage_id", "") or "")
        lines.append((f"[{n}] ({source}) " if source else f"[{n}] ") + text)
    return "\n".join(lines) if lines else "(no evidence was retrieved)"


def build_messages(kind: str, question: str, items: Sequence[Any],
                   context_style: str = "numbered", released: ReleasedPrompts | None = None
                   ) -> list[dict[str, str]]:
    """The reader's chat; with ``released``, the released ``rag_qa_<kind>`` template, whose user turn
    is the released layout (``Wikipedia Title:`` blocks, then the question and ``Thought:``)."""
    if kind not in TEMPLATE:
        raise ValueError(f"reader kind {kind!r} is not one of {', '.join(KINDS)}")
    if released is not None:
        blocks = "".join(f"Wikipedia Title: {t}\n\n" for t in _texts(items))
        return released.reader(kind, f"{blocks}Question: {question}\nThought: ")
    example, system, thought = _EXAMPLE_CONTEXT, TEMPLATE[kind], _EXAMPLE_THOUGHT
    if context_style == "wikipedia_title":  # the demonstration and instructions in the same layout
        example = format_context([line.split(") ", 1)[1] for line in _EXAMPLE_CONTEXT.splitlines()],
                                 context_style)
        system, thought = TEMPLATE_BLOCKS[kind], _EXAMPLE_THOUGHT_BLOCKS
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": USER_TEMPLATE.format(context=example,
                                                         question=_EXAMPLE_QUESTION)},
        {"role": "assistant", "content": f"{thought}\n{ANSWER_MARKER} {_EXAMPLE_ANSWER[kind]}"},
        {"role": "user", "content": USER_TEMPLATE.format(context=format_context(items, context_style),
                                                         question=question.strip())},
    ]


def _texts(items: Sequence[Any]) -> list[str]:
    return [(item if isinstance(item, str) else str(item.text)).strip() for item in items]


@dataclass
class ParsedAnswer:
    answer: str
    thought: str
    marker_found: bool  # False: no "Answer:" in the reply, the whole text was taken


def parse_answer(text: str) -> ParsedAnswer:
    """Take what follows the last "Answer:" (a model may write the marker inside its thought).

    Without any marker the whole reply (minus a leading "Thought:") is the answer and
    ``marker_found`` is False, so the trace shows that the format was not followed.
    """
    text = text or ""
    cut = text.rfind(ANSWER_MARKER)
    if cut < 0:
        body = _strip_thought(text).strip()
        return ParsedAnswer(answer=body, thought="", marker_found=False)
    answer = text[cut + len(ANSWER_MARKER):].strip()
    thought = _strip_thought(text[:cut]).strip()
    return ParsedAnswer(answer=answer, thought=thought, marker_found=True)


def parse_answer_released(text: str) -> ParsedAnswer:
    """The released reading (``reader.answer_extraction=released``): the text between the first
    and the second "Answer:", stripped; with no marker the whole reply, as it came."""
    text = text or ""
    parts = text.split(ANSWER_MARKER)
    if len(parts) < 2:
        return ParsedAnswer(answer=text, thought="", marker_found=False)
    return ParsedAnswer(answer=parts[1].strip(), thought=_strip_thought(parts[0]).strip(), marker_found=True)


# Citation marks the numbered context invites: "[2]", "[1, 3]", "[1][3]", "[2-4]".
_CITATION = re.compile(r"\s*\[\s*\d+(?:\s*[-,;–]\s*\d+)*\s*\]")
_LEAD = re.compile(r"^(?:the\s+)?(?:final\s+|short\s+)?answer\s*(?:is\s*:?|:)\s*", re.IGNORECASE)


def short_answer(answer: str) -> str:
    """The span EM/F1 score, from a parsed answer (``precise`` reader).

    The model often keeps the habits of its thought after "Answer:": citation marks ("Phoolwari
    [2]."), a second line of explanation, a trailing full stop, quotes, a lead-in ("The answer is
    ..."). Those are answer form, not content: SQuAD-style normalisation drops only articles and
    punctuation, so "Phoolwari [2]" would lose F1 for the "2". Only the first non-empty line counts.
    """
    line = next((ln for ln in (answer or "").splitlines() if ln.strip()), "")
    line = _CITATION.sub("", line).strip()
    line = _LEAD.sub("", line).strip()
    line = line.strip().strip("\"'“”‘’*`").strip()
    return line.rstrip(" .;:,").strip()


def _strip_thought(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith(THOUGHT_MARKER):
        return stripped[len(THOUGHT_MARKER):]
    return text
