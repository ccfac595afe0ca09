"""Small helpers shared by the retrievers when they assemble traces."""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def unique_in_order(items: Iterable[T]) -> list[T]:
    """Deduplicate, keeping each item's first (best-ranked) position."""
    seen: dict[T, None] = {}
    for it in items:
        seen.setdefault(it, None)
    return list(seen)
