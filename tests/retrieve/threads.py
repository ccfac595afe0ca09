"""One torch thread for the tiny-SpMM propagation tests (import the fixture into a test module)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """Tiny SpMMs: a second OpenMP thread only adds synchronisation (ms each on a busy machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
