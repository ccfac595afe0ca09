"""Atomic Question Decomposition prompt (paper §3.2, Appendix E "Figure 9").

One call both scores the question's structural complexity (0-10) and, when the question is
complex enough, writes at most ``max_sub_questions`` atomic sub-questions with a focus tag.
The wording is ours, written from the paper's description: a rubric for the score, and
sub-questions that each target one facet (an entity mention, a relation, an intermediate
step) rather than paraphrase the whole question.
"""
from __future__ import annotations

import json
import re
from typing import Any

from atomicrag.prompts.released import ReleasedPrompts

VERSION = "decompose-v2"

FOCUS_LABELS = ("entity", "relationship", "reasoning", "context")

# The reply a backend validates (guided decoding where it can). max_sub_questions is not a
# schema bound: the cap is applied in code so one schema serves every config.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "needs_decomposition": {"type": "boolean"},
        "complexity_score": {"type": "number", "minimum": 0, "maximum": 10},
        "reasoning": {"type": "string"},
        "sub_questions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "question": {"type": "string"},
                    "focus": {"type": "string", "enum": list(FOCUS_LABELS)},
                },
                "required": ["id", "question", "focus"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["needs_decomposition", "complexity_score", "reasoning", "sub_questions"],
    "additionalProperties": False,  # OpenAI strict mode requires it on every object
}

TEMPLATE = """You prepare questions for a retrieval system whose knowledge base stores small, \
self-contained facts ("knowledge atoms"), each stating one idea.

Step 1. Rate how structurally complex the question is, on a scale from 0 to 10:
- 0-3: a single fact about a single entity answers it (who / what / when / where).
- 4-6: one entity and one relation, possibly with a qualifier or a little context.
- 7-8: two or more entities or relations, a comparison, or an intermediate fact that must \
be found before the asked one (two hops).
- 9-10: three or more reasoning steps, several constraints, or a compound request that mixes \
different aspects (for example causes and treatments).

{step2}

Step 3. Only when "needs_decomposition" is true, write at most {max_sub_questions} atomic \
sub-questions. Each sub-question must:
- ask for exactly one fact that a single short statement could answer;
- target one distinct facet of the question: grounding an entity mention, one specific \
relation, or one intermediate reasoning step; never restate the whole question;
- be searchable on its own: name entities explicitly, with no pronouns and no references \
such as "the above";
- stay in the domain and vocabulary of the original question.
Number them 1, 2, ... in "id" and give each a "focus" label: "entity", "relationship", \
"reasoning" or "context". When "needs_decomposition" is false, "sub_questions" is [].

Reply with one JSON object and nothing else:
{{"needs_decomposition": <true or false>, "complexity_score": <number from 0 to 10>, \
"reasoning": "<one or two sentences>", "sub_questions": [{{"id": 1, "question": "<sub-question>", \
"focus": "<label>"}}]}}

Question: {question}"""


# Step 2 per ``decompose.decompose_trigger``. Under "score" the flag restates the score (the
# trigger reads the score alone). Under "score_and_flag" (switch #8) the flag is an independent
# judgement on criteria of its own, as in the released code's question-analysis prompt, so that
# "score >= threshold AND flag" is a real conjunction of two opinions; the wording here is ours.
STEP2_SCORE = ('Step 2. Set "needs_decomposition" to true when your score is {threshold} or higher, '
               'otherwise false.')
STEP2_CRITERIA = (
    'Step 2. Decide "needs_decomposition" on its own, independently of the score:\n'
    "- true when the question involves several entities or relations, needs multi-hop reasoning, "
    "asks how/why or for a comparison that spans steps, or is a compound request that one fact "
    "is unlikely to answer;\n"
    "- false when a single fact settles it (a who / what / when / where lookup) or it has one entity and "
    "relation with a direct answer."
)
STEP2 = {"score": STEP2_SCORE, "score_and_flag": STEP2_CRITERIA}


def build_messages(question: str, *, max_sub_questions: int, threshold: float,
                   trigger: str = "score", released: ReleasedPrompts | None = None) -> list[dict[str, str]]:
    """Chat messages for one question (a single user turn: the rubric carries everything).

    With ``released`` the released question-analysis template is sent instead; it carries its own
    threshold wording, so ``threshold`` and ``trigger`` act only in code (``retrieve.decompose``).
    """
    if released is not None:
        # the released call renders the question as given (a trailing space in the dataset stays)
        return released.decomposition(question, max_sub_questions)
    if trigger not in STEP2:
        raise ValueError(f"decompose trigger {trigger!r} is not one of {', '.join(STEP2)}")
    step2 = STEP2[trigger].format(threshold=_fmt_threshold(threshold))
    content = TEMPLATE.format(question=question.strip(), max_sub_questions=max_sub_questions, step2=step2)
    return [{"role": "user", "content": content}]


def _fmt_threshold(threshold: float) -> str:
    # 6.5 stays "6.5", 7.0 becomes "7": the model reads the number as written in the rubric.
    return f"{threshold:g}"


def parse_reply(obj: Any) -> tuple[bool, float, str, list[dict[str, Any]]]:
    """Validate a parsed reply and return (needs_decomposition, score, reasoning, sub_questions).

    Raises ``TypeError`` when the object does not have the promised shape, so that the caller
    counts a failure instead of silently reading a missing score as 0. Sub-question entries
    with an empty question are dropped; ids and focus labels are normalised, never invented
    as content.
    """
    if not isinstance(obj, dict):
        raise TypeError(f"decomposition reply is {type(obj).__name__}, not an object")
    needs = obj.get("needs_decomposition")
    if not isinstance(needs, bool):
        raise TypeError("decomposition reply lacks a boolean 'needs_decomposition'")
    score = obj.get("complexity_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise TypeError("decomposition reply lacks a numeric 'complexity_score'")
    reasoning = obj.get("reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else str(reasoning)
    raw_subs = obj.get("sub_questions", [])
    if raw_subs is None:
        raw_subs = []
    if not isinstance(raw_subs, list):
        raise TypeError("decomposition reply's 'sub_questions' is not a list")
    subs: list[dict[str, Any]] = []
    for position, item in enumerate(raw_subs, start=1):
        if isinstance(item, str):  # a bare string is still a usable sub-question
            item = {"question": item}
        if not isinstance(item, dict):
            continue
        text = str(item.get("question") or "").strip()
        if not text:
            continue
        focus = str(item.get("focus") or "reasoning").strip().lower()
        subs.append({
            "id": item.get("id", position),
            "question": text,
            "focus": focus if focus in FOCUS_LABELS else "reasoning",
        })
    return needs, float(score), reasoning.strip(), subs


_JSON_FENCE = "```json"
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _released_json(text: str) -> Any:
    """The released fallbacks: the reply as JSON, else a ```json fence, else the widest {...}."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if _JSON_FENCE in text:
        try:
            return json.loads(text.split(_JSON_FENCE)[1].split("```")[0].strip())
        except (IndexError, json.JSONDecodeError):
            pass
    match = _OBJECT.search(text)
    if match:
        try:
            return json.loads(match.group())
        except json.JSONDecodeError:
            pass
    raise ValueError(f"no JSON object in the reply: {text[:200]!r}")


def parse_reply_released(text: str, max_sub_questions: int) -> tuple[bool, float, str, list[dict[str, Any]]]:
    """The released reading of a free-text reply (``decompose.decompose_parse=released``).

    Sub-questions are capped at ``max_sub_questions`` *before* anything is dropped (a non-object
    entry in the first places takes a place), and empty or repeated sub-questions are kept.
    Raises ``ValueError``/``TypeError`` where the released code falls back to "no decomposition"
    (the caller counts it).
    """
    obj = _released_json((text or "").strip())
    if not isinstance(obj, dict):
        raise TypeError(f"decomposition reply is {type(obj).__name__}, not an object")
    needs = bool(obj.get("needs_decomposition", False))
    score = float(obj.get("complexity_score", 0.0))
    reasoning = obj.get("reasoning", "")
    subs: list[dict[str, Any]] = []
    for item in (obj.get("sub_questions", []) or [])[:max_sub_questions]:
        if not isinstance(item, dict):
            continue
        subs.append({"id": int(item.get("id", len(subs) + 1)), "question": item.get("question", "").strip(),
                     "focus": item.get("focus", "reasoning")})
    return needs, score, reasoning if isinstance(reasoning, str) else str(reasoning), subs
