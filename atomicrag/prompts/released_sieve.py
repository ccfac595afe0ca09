"""The released sieve (``sieve.sieve_prompt=released``): its prompt read from a checkout, its
free-text reply parsed the released way.

The released fragment filter builds its prompt inside a class, not in a template file: two
string attributes set in ``__init__`` (the input and the output frame), a system text and a list
of worked examples local to the method that assembles the messages, and the completion budget
set in the method that calls the model. ``load`` reads those values from the checkout with the
same closed ``ast`` evaluator as the templates (``released_parse``); nothing is imported or run,
and no text of the checkout is stored here. A checkout whose filter is laid out differently
fails with ``ReleasedParseError`` naming the file.

``parse_reply`` follows the released parser: the reply is split into ``[[ ## name ## ]]``
sections (a marker line's own rest is dropped), the first ``kept_fragment_ids`` section is read
as JSON, else as a Python literal, and validated as ``{"keep_indices": [int, ...]}`` with the
lax integer coercion of the released validator. Valid ids are kept in the model's order,
repeats and out-of-range ids dropped; an unreadable section, or none at all, keeps every
fragment. Unlike the released code, which only logs it, every fallback is returned here so the
caller counts it.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from atomicrag.prompts._common import python_literal
from atomicrag.prompts.released_parse import ModuleConstants, ReleasedParseError

FILTER_FILE = Path("atomicrag/fragment_filter.py")
FILTER_CLASS = "FragmentFilter"
# attribute / local names the released class uses for each piece
INPUT_ATTR, OUTPUT_ATTR = "input_template", "output_template"
TEMPLATE_METHOD, SYSTEM_LOCAL, EXAMPLES_LOCAL = "_make_template", "system_prompt", "examples"
CALL_METHOD, BUDGET_KEY = "_llm_call_async", "max_completion_tokens"
SECTION = "kept_fragment_ids"
INPUT_FIELDS = ("question", "fragments_before_filter")

_MARKER = re.compile(r"\[\[ ## (\w+) ## \]\]")


@dataclass(frozen=True)
class ReleasedSieve:
    """The released filter's prompt pieces, as read from one checkout."""

    root: str
    system: str
    input_frame: str  # str.format fields: question, fragments_before_filter
    output_frame: str  # str.format field: kept_fragment_ids
    examples: tuple[tuple[str, str, str], ...]  # (question, fragments block, kept ids block)
    max_tokens: int  # the completion budget the released call sends

    def messages(self, question: str, fragments: list[str]) -> list[dict[str, str]]:
        """System text, the worked examples as user/assistant turns, then the real question."""
        msgs = [{"role": "system", "content": self.system}]
        for q, frags, kept in self.examples:
            msgs.append({"role": "user", "content": self.input_frame.format(
                question=q, fragments_before_filter=frags)})
            msgs.append({"role": "assistant", "content": self.output_frame.format(kept_fragment_ids=kept)})
        block = json.dumps({"fragments": [{"id": i, "text": t} for i, t in enumerate(fragments)]})
        msgs.append({"role": "user", "content": self.input_frame.format(
            question=question, fragments_before_filter=block)})
        return msgs

    def texts(self) -> list[str]:
        """Every text of the prompt (for checks that our own prompts do not reuse them)."""
        return [self.system, self.input_frame, self.output_frame] + [t for ex in self.examples for t in ex]


def _class(mod: ModuleConstants, name: str) -> ast.ClassDef:
    for node in mod.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise ReleasedParseError(f"{mod.path}: no class {name!r}")


def _method(cls: ast.ClassDef, name: str, path: Path) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise ReleasedParseError(f"{path}: class {cls.name!r} has no method {name!r}")


def _self_attribute(cls: ast.ClassDef, attr: str, path: Path) -> ast.expr:
    """The value of the first ``self.<attr> = ...`` in the class."""
    for node in ast.walk(cls):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
                and node.targets[0].attr == attr and isinstance(node.targets[0].value, ast.Name)
                and node.targets[0].value.id == "self"):
            return node.value
    raise ReleasedParseError(f"{path}: class {cls.name!r} never sets self.{attr}")


def _local(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, path: Path) -> ast.expr:
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            return node.value
    raise ReleasedParseError(f"{path}: {fn.name!r} assigns no {name!r}")


def _budget(fn: ast.FunctionDef | ast.AsyncFunctionDef, path: Path) -> int:
    """``<dict>['max_completion_tokens'] = N`` inside the call method."""
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].slice, ast.Constant) and node.targets[0].slice.value == BUDGET_KEY
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int)):
            return int(node.value.value)
    raise ReleasedParseError(f"{path}: {fn.name!r} sets no integer {BUDGET_KEY!r}")


def _text(value: Any, what: str, path: Path, fields: tuple[str, ...] = ()) -> str:
    if not isinstance(value, str):
        raise ReleasedParseError(f"{path}: {what} is not a string")
    missing = [f for f in fields if "{" + f + "}" not in value]
    if missing:
        raise ReleasedParseError(f"{path}: {what} lacks the field(s) {missing}")
    return value


@lru_cache(maxsize=4)
def load(root: str) -> ReleasedSieve:
    """Read the released filter's prompt from the checkout at ``root``."""
    path = Path(root) / FILTER_FILE
    if not path.is_file():
        raise ReleasedParseError(f"{Path(root)}: no {FILTER_FILE} (not a checkout of the released code?)")
    mod = ModuleConstants(path)
    cls = _class(mod, FILTER_CLASS)
    input_frame = _text(mod.resolve(_self_attribute(cls, INPUT_ATTR, path), {}), f"self.{INPUT_ATTR}",
                        path, INPUT_FIELDS)
    output_frame = _text(mod.resolve(_self_attribute(cls, OUTPUT_ATTR, path), {}), f"self.{OUTPUT_ATTR}",
                         path, (SECTION,))
    make = _method(cls, TEMPLATE_METHOD, path)
    system = _text(mod.resolve(_local(make, SYSTEM_LOCAL, path), {}), SYSTEM_LOCAL, path)
    raw_examples = mod.resolve(_local(make, EXAMPLES_LOCAL, path), {})
    keys = ("question", "fragments_before_filter", SECTION)
    if not (isinstance(raw_examples, list) and raw_examples
            and all(isinstance(e, dict) and all(isinstance(e.get(k), str) for k in keys) for e in raw_examples)):
        raise ReleasedParseError(f"{path}: {EXAMPLES_LOCAL} is not a list of {keys} string dicts")
    examples = tuple(tuple(e[k] for k in keys) for e in raw_examples)
    budget = _budget(_method(cls, CALL_METHOD, path), path)
    return ReleasedSieve(root=root, system=system, input_frame=input_frame, output_frame=output_frame,
                         examples=examples, max_tokens=budget)  # type: ignore[arg-type]  # tuples of 3 by construction


@dataclass
class SieveReply:
    """What the released parser makes of one reply."""

    keep: list[int]  # fragment ids in the model's order (all ids on a fallback)
    invalid: list[Any] = field(default_factory=list)  # out-of-range ids, skipped as released
    fallback: str | None = None  # why every fragment was kept (None: the reply was read)


def sections(text: str) -> list[tuple[str | None, str]]:
    """``[[ ## name ## ]]`` sections of a reply in order, each value stripped; text before the
    first marker has name None. As released, whatever follows a marker on its own line is lost."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines():
        match = _MARKER.match(line.strip())
        if match:
            out.append((match.group(1), []))
        else:
            out[-1][1].append(line)
    return [(k, "\n".join(v).strip()) for k, v in out]


def _lax_int(value: Any) -> int:
    """An id as the released validator (a lax integer field) accepts it; ValueError otherwise."""
    if isinstance(value, bool):  # a lax integer field takes True/False as 1/0
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError(f"{value!r} has a fraction")
    if isinstance(value, str):
        s = value.strip()
        try:
            return int(s)
        except ValueError:
            as_float = float(s)  # "4.0" passes, "x" raises ValueError
            if as_float.is_integer():
                return int(as_float)
            raise ValueError(f"{value!r} has a fraction") from None
    raise ValueError(f"{type(value).__name__} is not an integer")


def _keep_list(parsed: Any) -> list[int]:
    if not isinstance(parsed, dict) or "keep_indices" not in parsed:
        raise ValueError("not an object with 'keep_indices'")
    items = parsed["keep_indices"]
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise ValueError("'keep_indices' is not a list")
    return [_lax_int(x) for x in items]


def parse_reply(text: str, n: int) -> SieveReply:
    """The released reading of a sieve reply over ``n`` fragments (see the module docstring)."""
    for name, value in sections(text):
        if name != SECTION:
            continue
        try:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                parsed = python_literal(value)  # literals only: never runs code
            ids = _keep_list(parsed)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            return SieveReply(keep=list(range(n)), fallback=f"unreadable {SECTION}: {exc}")
        keep: list[int] = []
        invalid: list[Any] = []
        for idx in ids:
            if not 0 <= idx < n:
                invalid.append(idx)
            elif idx not in keep:
                keep.append(idx)
        return SieveReply(keep=keep, invalid=invalid)
    return SieveReply(keep=list(range(n)), fallback=f"no {SECTION} section")
