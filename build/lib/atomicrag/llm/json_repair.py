"""Turn almost-JSON from a model into a validated object.

Small models (and any model without grammar-constrained decoding) wrap JSON in code fences
and prose, use Python literals and single quotes, leave trailing commas, and get cut off by
``max_tokens`` in the middle of a string. ``parse_reply`` is the one place every backend
turns reply text into an object, so the fake backend exercises exactly the repair and
validation path the real ones use.

Strategy: strict ``json`` decoding is tried first at every candidate ``{``/``[`` (so valid
JSON is never "repaired"); only when no candidate parses and validates is a lenient
recursive-descent parser used, which builds Python objects directly and closes whatever a
truncation left open.

``salvage_json`` is the same lenient parser in its ``complete_only`` mode, for a reply cut at
``max_tokens`` whose half-written last element must not pass for data (the atomizer: a
cut-off fragment would be half an atom): the incomplete tail is dropped, never guessed.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LITERALS: dict[str, Any] = {
    "true": True, "True": True, "TRUE": True,
    "false": False, "False": False, "FALSE": False,
    "null": None, "None": None, "none": None, "NULL": None, "undefined": None,
    "NaN": None, "nan": None,  # JSON has no NaN; null is the closest schema-checkable value
}
_MAX_CANDIDATES = 20  # start positions tried; prose rarely holds more brackets than this


class ReplyParseError(ValueError):
    """The reply holds no JSON that parses and matches the request's schema."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text


# ----------------------------------------------------------------------------- lenient parser
class _Truncated(Exception):
    """Input ended where a value was expected."""


class _Lenient:
    """Recursive-descent parser that accepts the usual LLM JSON mistakes.

    ``complete_only``: a value the text ends inside (a string without its closing quote, a bare
    word that may be cut) is dropped with its key, instead of kept as far as it was written.
    ``cut`` says whether the text ended before the value was closed.
    """

    def __init__(self, text: str, complete_only: bool = False) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.complete_only = complete_only
        self.cut = False

    def _ws(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif s.startswith("//", self.i):  # JS-style comments some models add
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                self.i = n if j < 0 else j + 2
            else:
                break

    def _peek(self) -> str:
        self._ws()
        return self.s[self.i] if self.i < self.n else ""

    def value(self) -> Any:
        c = self._peek()
        if not c:
            self.cut = True
            raise _Truncated
        if c == "{":
            self.i += 1
            return self._object()
        if c == "[":
            self.i += 1
            return self._array()
        if c in "\"'":
            return self._string(c)
        return self._bare()

    def _object(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            c = self._peek()
            if not c or c == "}":  # EOF: truncated object, close it
                self.i += 1 if c else 0
                self.cut = self.cut or not c
                return out
            if c in ",:":  # stray/trailing separators
                self.i += 1
                continue
            if c in "]":  # mismatched closer: treat as the end of this object
                self.i += 1
                return out
            try:
                key = self.value()
            except _Truncated:
                return out
            if isinstance(key, (dict, list)):  # a value where a key belongs: give up on this level
                return out
            key = "" if key is None else str(key) if not isinstance(key, bool) else str(key).lower()
            c = self._peek()
            if c == ":":
                self.i += 1
            elif not c:
                self.cut = True
                return out  # truncated after a key: drop the key
            try:
                out[key] = self.value()
            except _Truncated:
                return out  # truncated after "key": drop the key

    def _array(self) -> list[Any]:
        out: list[Any] = []
        while True:
            c = self._peek()
            if not c or c == "]":
                self.i += 1 if c else 0
                self.cut = self.cut or not c
                return out
            if c in ",:":
                self.i += 1
                continue
            if c == "}":
                self.i += 1
                return out
            try:
                out.append(self.value())
            except _Truncated:
                return out

    def _string(self, quote: str) -> str:
        s, n = self.s, self.n
        self.i += 1
        buf: list[str] = []
        while self.i < n:
            c = s[self.i]
            if c == "\\" and self.i + 1 < n:
                e = s[self.i + 1]
                self.i += 2
                if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[self.i:self.i + 4]):
                    buf.append(chr(int(s[self.i:self.i + 4], 16)))
                    self.i += 4
                else:
                    buf.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(e, e))
                continue
            if c == quote:
                if quote == "'" and not self._closes_at(self.i + 1):
                    buf.append(c)  # an apostrophe inside a single-quoted string: O'Brien
                    self.i += 1
                    continue
                self.i += 1
                break
            buf.append(c)
            self.i += 1
        else:  # EOF inside a string (truncation)
            self.cut = True
            if self.complete_only:
                raise _Truncated
            # keep what was generated, the string is closed here
        text = "".join(buf)
        try:  # recombine surrogate pairs produced by \\uD83D\\uDE00 escapes
            return text.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeError:
            return text

    def _closes_at(self, j: int) -> bool:
        while j < self.n and self.s[j] in " \t\r\n":
            j += 1
        return j >= self.n or self.s[j] in ",:}]"

    def _bare(self) -> Any:
        """Unquoted token: number, literal (true/True/None...), or a bare word as a string."""
        s, n = self.s, self.n
        j = self.i
        while j < n and s[j] not in ",:{}[]\"'\n":
            j += 1
        tok = s[self.i:j].strip()
        if not tok:
            if j < n and s[j] in ",}]":  # a missing value ({"a": , ...}): read it as null
                self.i = j
                return None
            self.i = j + 1 if j == self.i else j  # a stray ':' or blank run: skip it
            return self.value()
        self.i = j
        if j >= n and self.complete_only and not _NUMBER.fullmatch(tok):
            self.cut = True  # "tr" of a cut "true", or of a bare word: not a value yet
            raise _Truncated
        if tok in _LITERALS:
            return _LITERALS[tok]
        if _NUMBER.fullmatch(tok):
            return float(tok) if any(ch in tok for ch in ".eE") else int(tok)
        if re.fullmatch(r"-?\d+\.", tok):  # number cut off after the point
            return int(tok[:-1])
        return tok


# ----------------------------------------------------------------------------- public helpers
def strip_fences(text: str) -> str:
    """Content of the first ```json fence (to the end when the fence was never closed)."""
    m = _FENCE.search(text)
    return m.group(1) if m and m.group(1).strip() else text


def _candidates(text: str) -> list[int]:
    starts = [m.start() for m in re.finditer(r"[\[{]", text)]
    return starts[:_MAX_CANDIDATES]


def repair_json(text: str) -> Any:
    """Best-effort parse of the first JSON object/array in ``text`` (no schema check)."""
    body = strip_fences(text)
    starts = _candidates(body)
    if not starts:
        stripped = body.strip()
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            raise ReplyParseError("reply contains no JSON object or array", text) from None
    decoder = json.JSONDecoder(strict=False)
    for start in starts:
        try:
            return decoder.raw_decode(body, start)[0]
        except json.JSONDecodeError:
            continue
    return _Lenient(body[starts[0]:]).value()


def salvage_json(text: str) -> tuple[Any, bool] | None:
    """(object, was_cut) of the first JSON object in ``text``, keeping only complete elements.

    Valid JSON (after fences and surrounding prose are stripped) is decoded as it is. A reply
    cut mid-object is closed where the last complete element ends: the half-written tail is
    dropped, with its key. None when no object can be read.
    """
    body = strip_fences(text)
    start = body.find("{")
    if start < 0:
        return None
    try:
        return json.JSONDecoder(strict=False).raw_decode(body, start)[0], False
    except json.JSONDecodeError:
        pass
    parser = _Lenient(body[start:], complete_only=True)
    try:
        obj = parser.value()
    except (_Truncated, RecursionError):
        return None
    return (obj, parser.cut) if isinstance(obj, dict) else None


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def schema_error(obj: Any, schema: dict[str, Any]) -> str | None:
    """None when ``obj`` matches ``schema``, else a one-line description of the best error."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    err = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "<root>"
    return f"at {where}: {err.message[:300]}"


def _coerce(obj: Any, schema: dict[str, Any]) -> Any:
    """Fix shape slips that lose no information.

    An object schema with exactly one array property, answered with a bare array, is wrapped
    into that property: small models often reply ``["a", "b"]`` for ``{"entities": [...]}``.
    """
    if schema.get("type") == "object" and isinstance(obj, list):
        props = schema.get("properties", {})
        arrays = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "array"]
        if len(props) == 1 and len(arrays) == 1:
            return {arrays[0]: obj}
    return obj


def parse_reply(text: str, schema: dict[str, Any] | None) -> Any:
    """Parse ``text`` into an object that matches ``schema``; raise ``ReplyParseError`` if impossible.

    With ``schema=None`` the reply is free text and is returned unchanged.
    """
    if schema is None:
        return text
    if not text or not text.strip():
        raise ReplyParseError("empty reply", text)
    body = strip_fences(text)
    starts = _candidates(body)
    first_error: str | None = None
    decoder = json.JSONDecoder(strict=False)
    # Pass 1: strict JSON at each candidate; pass 2: lenient parse at each candidate.
    # Only top-level values count: a candidate inside a value already parsed in this pass
    # (e.g. an inner ["type"] of a wrong object) is skipped, or a fragment of a wrong reply
    # could pass for the answer.
    for lenient in (False, True) if starts else (False,):  # prose alone is never "repaired"
        covered = -1
        for start in starts or [len(body) - len(body.lstrip())]:
            if start < covered:
                continue
            try:
                if lenient:
                    parser = _Lenient(body[start:])
                    obj, covered = parser.value(), start + parser.i
                else:
                    obj, covered = decoder.raw_decode(body, start)
            except (json.JSONDecodeError, _Truncated, RecursionError):
                continue
            obj = _coerce(obj, schema)
            err = schema_error(obj, schema)
            if err is None:
                return obj
            first_error = first_error or err
    if first_error:
        raise ReplyParseError(f"reply JSON does not match the schema {first_error}", text)
    raise ReplyParseError("reply contains no parseable JSON", text)
