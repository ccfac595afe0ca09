"""Entity canonicalisation: lower-case, every non-alphanumeric character -> space, collapse.

"St. Maurice's Abbey" -> "st maurice s abbey". Alphanumeric is Unicode-aware (so "Gödel"
stays "gödel"); the released code's ASCII-only class would turn it into "g del".
"""
from __future__ import annotations

import re

_NON_ALNUM = re.compile(r"[\W_]+")  # anything that is not a Unicode letter or digit


def canonical_key(text: str) -> str:
    return " ".join(_NON_ALNUM.sub(" ", text.lower()).split())


def alnum_count(text: str) -> int:
    """Alphanumeric characters of a string (synonym edges need at least synonym_min_alnum)."""
    return sum(ch.isalnum() for ch in text)
