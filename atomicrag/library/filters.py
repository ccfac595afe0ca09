"""Metadata filters at query time: which documents a query may retrieve from.

``where`` is either a dict ``{field: value}`` or a function of a ``Document`` returning a bool.
A dict's fields are a document's metadata keys (every key of the dict it was given besides
``text``, plus ``path`` for files) or ``id`` / ``title``; a value matches by equality, a list, tuple or
set of values matches any of them, and a metadata value that is itself a list (tags) matches
when one of its items does. Every field must match. A field no document has, or a filter that
no document matches, is an error that names it: a typo never answers from nothing or from everything.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from atomicrag.library.types import Document

Where = Mapping[str, Any] | Callable[[Document], bool]
_FIELDS = ("id", "title")


def _field(doc: Document, key: str) -> Any:
    if key in doc.meta:
        return doc.meta[key]
    return getattr(doc, key) if key in _FIELDS else None


def _matches(have: Any, want: Any) -> bool:
    wants = list(want) if isinstance(want, (list, tuple, set, frozenset)) else [want]
    haves = list(have) if isinstance(have, (list, tuple, set, frozenset)) else [have]
    return any(h == w for h in haves for w in wants)


def matching_ids(docs: Mapping[str, Document], where: Where) -> list[str]:
    """Ids of the documents ``where`` keeps, in index order (see the module docstring)."""
    if callable(where):
        keep = where
    elif isinstance(where, Mapping):
        if not where:
            raise ValueError("where={}: an empty filter; pass where=None to search every document")
        known = {k for d in docs.values() for k in d.meta} | set(_FIELDS)
        unknown = [k for k in where if k not in known]
        if unknown:
            raise ValueError(f"where: no document has the field(s) {', '.join(map(repr, unknown))}; "
                             f"fields: {', '.join(sorted(known))}")

        def keep(doc: Document) -> bool:
            return all(_matches(_field(doc, k), v) for k, v in where.items())
    else:
        raise TypeError(f"where: expected a dict of field -> value (or list of values) or a function of a "
                        f"Document; got {type(where).__name__}")
    ids = [i for i, d in docs.items() if keep(d)]
    if not ids:
        shown = "the function" if callable(where) else repr(dict(where))
        raise ValueError(f"where={shown}: no document matches (of {len(docs)})")
    return ids
