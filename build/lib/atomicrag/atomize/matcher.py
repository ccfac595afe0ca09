"""Multi-pattern entity matching in linear time: a token trie, longest match first.

Text and terms are tokenised the same way as the graph's canonical keys (lower-cased runs
of letters and digits; everything else separates tokens), so a match always falls on word
boundaries and "St. Maurice's Abbey" matches "st maurice s abbey". One pass over the text
walks the trie from every token (at most ``max_term_tokens`` steps each): O(tokens x L),
independent of the vocabulary size, instead of one regular expression per entity.

Overlaps are resolved longest-first (by characters, then leftmost): with the terms
"new york" and "york city council", the text "new york city council" yields
"york city council" only.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"[^\W_]+")  # runs of Unicode letters/digits: the canonical-key tokens


def tokens(text: str) -> list[tuple[str, int, int]]:
    """(lower-cased token, start, end) for each alphanumeric run of ``text``."""
    return [(m.group().lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


class TermMatcher:
    """Find vocabulary terms in texts; ``find`` returns non-overlapping (start, end, term_id)."""

    def __init__(self, terms: Iterable[str]) -> None:
        self.terms: list[str] = []
        self._root: dict = {}
        self.max_len = 0
        for term in terms:
            toks = [t for t, _, _ in tokens(term)]
            if not toks:
                continue
            node = self._root
            for t in toks:
                node = node.setdefault(t, {})
            if "\0" not in node:  # first surface form of a token sequence wins
                node["\0"] = len(self.terms)
                self.terms.append(term)
            self.max_len = max(self.max_len, len(toks))

    def __len__(self) -> int:
        return len(self.terms)

    def find_all(self, text: str) -> list[tuple[int, int, int]]:
        """Every occurrence of every term (overlapping), as (start, end, term_id)."""
        toks = tokens(text)
        out = []
        for i in range(len(toks)):
            node = self._root
            for j in range(i, min(len(toks), i + self.max_len)):
                node = node.get(toks[j][0])
                if node is None:
                    break
                tid = node.get("\0")
                if tid is not None:
                    out.append((toks[i][1], toks[j][2], tid))
        return out

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """Non-overlapping matches chosen longest first, returned in text order."""
        cands = self.find_all(text)
        cands.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
        taken: list[tuple[int, int, int]] = []
        for m in cands:
            # Matches per text are few, so a linear overlap check is cheaper than an interval tree.
            if all(m[1] <= s or m[0] >= e for s, e, _ in taken):
                taken.append(m)
        taken.sort()
        return taken
