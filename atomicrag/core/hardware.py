"""Which floating-point type an encoder runs in (``embedder.precision``).

``auto`` picks the fastest type that keeps the embeddings close to fp32 (minimum cosine to fp32
>= 0.999 on real MiniLM texts, ``tests/core/test_hardware.py``):

- CUDA: fp16 when ``embedder.fp16`` is true, else fp32;
- CPU with native bf16 arithmetic (AVX512-BF16 or AMX-BF16): bf16, faster than fp32 for MiniLM
  (the ``probe`` lines of ``results/benchmarks/indexing_2wiki_onnx_fp32_20261204.txt``);
- any other CPU: fp32. Without those instructions oneDNN emulates bf16 by converting to fp32
  around every product, which is slower than fp32 itself, so it is never chosen automatically.

``ATOMICRAG_AUTO_PRECISION=bf16`` (or ``fp32``) makes ``auto`` on a CPU resolve to that type
whatever the CPU has: the test suite run that way sees what a CPU with native bf16 gets (only
slower where bf16 is emulated), so precision-dependent results are checked on any machine. An
explicit ``embedder.precision`` is never overridden.

The resolved type is part of the encoder's ``name`` (``|bf16``/``|fp16``), which keys the
embedding cache: vectors made in one precision are never served for another.
"""
from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import torch

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
AUTO_ENV = "ATOMICRAG_AUTO_PRECISION"  # what precision=auto resolves to on a CPU: bf16 | fp32


@functools.lru_cache(maxsize=1)
def cpu_has_native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """True when the CPU has bf16 dot-product instructions (AVX512-BF16 or AMX-BF16).

    Linux: the kernel's feature flags. Elsewhere: what oneDNN reports (torch's mkldnn check),
    which on older torch builds only says "AVX512 present", hence the flags first.
    """
    path = Path(cpuinfo)
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return any(f in flags for f in _BF16_FLAGS)
    if "AMX" in torch.backends.cpu.get_cpu_capability():
        return True
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    try:
        return bool(check()) if check is not None else False
    except RuntimeError:  # the op exists only in builds with oneDNN
        return False


def resolve_precision(precision: str, device: str, fp16: bool = True) -> str:
    """The type to run in: ``fp32``, ``bf16`` or ``fp16`` for ``precision`` on ``device``."""
    if precision not in PRECISIONS:
        raise ValueError(f"embedder.precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    cuda = device.startswith("cuda")
    if precision == "auto":
        if cuda:
            return "fp16" if fp16 else "fp32"
        forced = os.environ.get(AUTO_ENV, "").strip().lower()
        if forced:
            if forced not in ("bf16", "fp32"):
                raise ValueError(f"{AUTO_ENV} must be bf16 or fp32, not {forced!r}")
            return forced
        return "bf16" if cpu_has_native_bf16() else "fp32"
    if precision == "bf16" and cuda and not torch.cuda.is_bf16_supported():
        raise ValueError(f"embedder.precision=bf16 but CUDA device {device!r} has no bf16 support; use fp16")
    if precision != "fp32" and not cuda and not (precision == "bf16" and cpu_has_native_bf16()):
        log.warning("embedder.precision=%s on a CPU without native %s: emulated, slower than fp32",
                    precision, precision)
    return precision
