"""The LLM server's share of the GPU, set from what the rest of the run needs.

A vLLM server this run starts on CUDA takes ``llm.gpu_memory_utilization`` of the card at start-up.
Unset, the share is the card less the run plan's estimate of the embedder, graph and PPR blocks
(``plan.gpu_bytes``) and a headroom (``core/gpu_memory.server_memory_fraction``); set, it wins.
What was chosen, and why, goes into metrics.json (``gpu_memory``).
"""
from __future__ import annotations

import logging
from typing import Any

from atomicrag.core.config import Config
from atomicrag.core.gpu_memory import GIB, server_memory_fraction

log = logging.getLogger("atomicrag")


def cuda_total_bytes() -> int | None:
    """Memory of CUDA device 0, None without CUDA."""
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.get_device_properties(0).total_memory)
    except Exception:  # noqa: BLE001 - no CUDA runtime: the same as no GPU
        return None
    return None


def _launches_cuda_server(cfg: Config) -> bool:
    llm = cfg.llm
    if llm.name != "vllm" or llm.base_url or llm.base_urls:
        return False  # attached to a server started elsewhere, or not vLLM
    return llm.device == "cuda" or (llm.device == "auto" and cuda_total_bytes() is not None)


def choose_llm_server_share(cfg: Config, run_plan: dict[str, Any] | None,
                            total_bytes: int | None = None) -> dict[str, Any] | None:
    """Set ``cfg.llm.gpu_memory_utilization`` from the run's needs when unset and this run starts
    a CUDA vLLM server; return what was chosen (None when no such server starts)."""
    if not _launches_cuda_server(cfg):
        return None
    if cfg.llm.gpu_memory_utilization is not None:
        return {"llm_fraction": cfg.llm.gpu_memory_utilization, "chosen_by": "config"}
    total = total_bytes if total_bytes is not None else cuda_total_bytes()
    if total is None:
        return None  # the server will fail to find a GPU and say so
    needs = dict((run_plan or {}).get("gpu_bytes") or {})
    others = sum(int(v) for v in needs.values())
    fraction = server_memory_fraction(total, others)
    cfg.llm.gpu_memory_utilization = fraction
    log.info("LLM server share of the GPU: %.3f of %.1f GiB (the run needs %.1f GiB beside it)",
             fraction, total / GIB, others / GIB)
    return {"llm_fraction": fraction, "chosen_by": "run plan" if needs else "no plan: headroom only",
            "gpu_total_gib": round(total / GIB, 2), "others_gib": round(others / GIB, 3), "others": needs}
