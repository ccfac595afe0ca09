"""Strict reading of data files: every problem names the file, the line (or record) and the field.

A dataset is read once per run but its mistakes cost hours later (a silently dropped passage
shifts recall, a numeric id breaks a join), so the loaders fail early and say exactly where.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """Malformed input data. ``str(err)`` reads ``<file>:<line>: field 'x': <problem>``."""

    def __init__(
        self,
        file: str | Path,
        line: int | None,
        field: str | None,
        problem: str,
        *,
        unit: str = "line",
    ) -> None:
        self.file = str(file)
        self.line = line
        self.field = field
        self.problem = problem
        # JSONL has lines; JSON arrays and HF tables have records/rows (1-based, like lines).
        where = self.file if line is None else (
            f"{self.file}:{line}" if unit == "line" else f"{self.file}: {unit} {line}"
        )
        what = f" field {field!r}:" if field else ""
        super().__init__(f"{where}:{what} {problem}")


# C0 controls but tab, newline and carriage return; DEL; C1 controls. NUL bytes and terminal escapes
# are not text: they would reach prompts and embeddings, and make exports unreadable (GraphML).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def clean_text(text: str) -> str:
    """``text`` without control characters (tab, newline and carriage return kept)."""
    return _CONTROL.sub("", text)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad lines raise ``DataError``."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = decode_line(path, lineno, raw)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(path, lineno, None, f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
            if not isinstance(obj, dict):
                raise DataError(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def decode_line(path: str | Path, lineno: int, raw: bytes) -> str:
    """One line of a data file as text; bytes that are not UTF-8 raise ``DataError`` at ``file:line``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, lineno, None, f"not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r} at column "
                                            f"{exc.start + 1}); re-encode the file as UTF-8") from exc


def read_text(path: str | Path) -> str:
    """A whole text file; bytes that are not UTF-8 raise ``DataError`` at ``file:line``."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(path, line, None, f"not UTF-8 text ({exc.reason}); re-encode the file as UTF-8") from exc


def read_json(path: Path) -> Any:
    """Read a whole JSON file; a syntax error names its line."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, None, f"invalid JSON ({exc.msg} at column {exc.colno})") from exc


def _type_name(types: tuple[type, ...]) -> str:
    names = {str: "string", list: "list", dict: "object", int: "integer", float: "number",
             bool: "boolean", type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


class Where:
    """Location of one record, so field checks can raise precise errors."""

    def __init__(self, file: str | Path, line: int, unit: str = "line") -> None:
        self.file, self.line, self.unit = file, line, unit

    def error(self, field: str | None, problem: str) -> DataError:
        return DataError(self.file, self.line, field, problem, unit=self.unit)


def require(obj: dict[str, Any], key: str, types: tuple[type, ...], where: Where) -> Any:
    if key not in obj:
        raise where.error(key, "missing required field")
    return check_type(obj[key], key, types, where)


def optional(obj: dict[str, Any], key: str, types: tuple[type, ...], where: Where, default: Any) -> Any:
    value = obj.get(key)
    if value is None:
        return default
    return check_type(value, key, types, where)


def check_type(value: Any, key: str, types: tuple[type, ...], where: Where) -> Any:
    # bool is an int subclass; never accept it where a number or string is meant
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise where.error(key, f"expected {_type_name(types)}, got {type(value).__name__} {_short(value)}")
    return value


def nonempty_str(obj: dict[str, Any], key: str, where: Where) -> str:
    value = require(obj, key, (str,), where)
    if not value.strip():
        raise where.error(key, "empty text")
    return value


def str_list(obj: dict[str, Any], key: str, where: Where, *, required: bool) -> list[str]:
    if required:
        value = require(obj, key, (list,), where)
    else:
        value = optional(obj, key, (list,), where, [])
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise where.error(f"{key}[{i}]", f"expected string, got {type(item).__name__} {_short(item)}")
    return list(value)


def coerce_id(value: Any, key: str, where: Where) -> str:
    """Lenient id for third-party formats: integers become strings, blanks are errors."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise where.error(key, f"expected string or integer id, got {type(value).__name__} {_short(value)}")
    text = str(value)
    if not text.strip():
        raise where.error(key, "empty id")
    return text


def coerce_answers(value: Any, key: str, where: Where) -> list[str]:
    """Third-party answers come as a string, a number, or a list of them."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise where.error(f"{key}[{i}]" if isinstance(value, (list, tuple)) else key,
                              f"expected string answer, got {type(item).__name__} {_short(item)}")
        out.append(str(item))
    return out


class IdRegistry:
    """Detect duplicate ids and say where the first one was."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.seen: dict[str, int] = {}

    def add(self, id_: str, key: str, where: Where) -> None:
        if id_ in self.seen:
            raise where.error(key, f"duplicate {self.kind} id {id_!r} (first at {where.unit} {self.seen[id_]})")
        self.seen[id_] = where.line


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
