"""Where the tests find a real checkout of the released code.

The repository's ``../shared/released_code/AtomicRAG`` (present in this project's CI), else the
``ATOMICRAG_RELEASED_CODE`` environment variable. Tests that need it skip only when neither exists.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_CHECKOUT = REPO.parent / "shared" / "released_code" / "AtomicRAG"


def released_checkout() -> Path | None:
    """The real checkout, or None when this machine has none."""
    for candidate in (SHARED_CHECKOUT, Path(os.environ.get("ATOMICRAG_RELEASED_CODE", "") or "/nonexistent")):
        if (candidate / "atomicrag" / "prompts" / "templates").is_dir():
            return candidate.resolve()
    return None


def require_checkout() -> Path:
    root = released_checkout()
    if root is None:
        pytest.skip(f"no checkout of the released code at {SHARED_CHECKOUT} or $ATOMICRAG_RELEASED_CODE")
    return root
