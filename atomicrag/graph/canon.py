"""Entity canonicalisation: lower-case, every non-alphanumeric character -> space, collapse.

"St. Maurice's Abbey" -> "st maurice s abbey". Alphanumeric is Unicode-aware (so "Gödel"
stays "gödel"). ``graph.entity_keys=ascii`` keys entities as the released code does
(``ascii_key``): only ASCII letters, digits and spaces survive, so "Gödel" becomes "g del", inner
runs of spaces stay, and every name with no ASCII letter or digit gets the same empty key.
"""
from __future__ import annotations

import re
from collections.abc import Callable

_NON_ALNUM = re.compile(r"[\W_]+")  # anything that is not a Unicode letter or digit
_NOT_ASCII_ALNUM_OR_SPACE = re.compile(r"[^a-z0-9 ]")  # applied after lower-casing


def canonical_key(text: str) -> str:
    return " ".join(_NON_ALNUM.sub(" ", text.lower()).split())


def ascii_key(text: str) -> str:
    """The released code's entity key: lower-cased, every character but an ASCII letter, digit or
    space turned into a space, the ends stripped (inner spaces kept; may be empty)."""
    return _NOT_ASCII_ALNUM_OR_SPACE.sub(" ", text.lower()).strip()


def entity_key_function(mode: str) -> Callable[[str], str]:
    """``graph.entity_keys``: unicode -> ``canonical_key``; ascii -> ``ascii_key``."""
    if mode not in ("unicode", "ascii"):
        raise ValueError(f"entity_keys={mode!r} is not 'unicode' or 'ascii'")
    return ascii_key if mode == "ascii" else canonical_key


def alnum_count(text: str) -> int:
    """Alphanumeric characters of a string (synonym edges need at least synonym_min_alnum)."""
    return sum(ch.isalnum() for ch in text)
