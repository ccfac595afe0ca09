"""PPR block sizing counts the bytes of the dtype the solve runs in (float64 for the exact solve)
and, on CUDA, leaves half the device's free memory to the embedder and a co-located vLLM server."""
from __future__ import annotations

import torch

from atomicrag.retrieve.propagate.base import block_width

CUDA = torch.device("cuda")


def test_float64_blocks_hold_half_the_queries_of_float32() -> None:
    n, q = 2_000_000, 4096
    f32 = block_width(n, q, CUDA, buffers=4, itemsize=4, free_bytes=1e12)
    f64 = block_width(n, q, CUDA, buffers=4, itemsize=8, free_bytes=1e12)
    assert f64 * 2 == f32 or (f32 == 1024 and f64 <= 1024)
    assert 8 * 4 * n * f64 <= 16 * 4e9  # the float64 buffers stay inside the budget


def test_cuda_blocks_fit_half_the_free_device_memory() -> None:
    n, q = 1_000_000, 4096
    free = 10 * 2**30  # a card with 10 GiB free next to the vLLM server
    b = block_width(n, q, CUDA, buffers=6, itemsize=8, free_bytes=free)
    assert 6 * 8 * n * b <= free / 2
    assert b < block_width(n, q, CUDA, buffers=6, itemsize=8, free_bytes=1e12)


def test_cpu_float64_counts_eight_bytes_in_the_cache_regime() -> None:
    cpu = torch.device("cpu")
    assert block_width(15_000, 1024, cpu, itemsize=8) < block_width(15_000, 1024, cpu, itemsize=4)
