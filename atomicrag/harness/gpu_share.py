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


# -- one card per sweep worker -----------------------------------------------------------------
# A multirun through joblib (hydra/launcher=local_parallel) or submitit's local executor starts
# several worker processes on one node; left alone, every one of them (and every vLLM server a row
# starts) would take GPU 0. Each worker process instead claims one card for its lifetime: an
# exclusive lock on a per-card file, kept until the process exits (a loky worker that runs several
# jobs keeps its card: CUDA reads CUDA_VISIBLE_DEVICES once, when it starts). The claimed card
# becomes the process's only visible device, and the servers it launches inherit it.
_CLAIMED: dict[str, Any] = {}
CARD_COUNT_ENV = "ATOMICRAG_GPU_COUNT"  # use only the first N cards (0: none); also how tests fake a node


def visible_cards() -> list[str]:
    """The cards this process may use: CUDA_VISIBLE_DEVICES's entries when set, else 0..n-1 for the
    node's n devices (``ATOMICRAG_GPU_COUNT`` caps n)."""
    import os

    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        cards = [c.strip() for c in listed.split(",") if c.strip()]
    else:
        cards = [str(i) for i in range(_device_count())]
    cap = os.environ.get(CARD_COUNT_ENV)
    if cap is not None:
        if not cap.strip().isdigit():
            raise ValueError(f"{CARD_COUNT_ENV} must be a whole number of cards, not {cap!r}")
        cards = cards[: int(cap)] if listed is not None else [str(i) for i in range(int(cap))]
    return cards


def _device_count() -> int:
    try:
        import torch

        return int(torch.cuda.device_count())  # NVML's count: creates no CUDA context
    except Exception:  # noqa: BLE001 - no CUDA runtime: no cards
        return 0


def claim_worker_card(lock_dir: str | None = None, wait_s: float = 3600.0) -> str | None:
    """Give this worker process one card of its own; return it (None: nothing to share).

    Nothing happens with fewer than two visible cards (one card is everyone's, as SLURM gives each
    job its own by CUDA_VISIBLE_DEVICES). Else the first card whose lock file is free is claimed
    and CUDA_VISIBLE_DEVICES set to it alone; with every card taken (more workers than cards) the
    worker waits for one, and says so. CUDA already started in this process cannot be moved: that
    is an error naming the cause, not a silent share of GPU 0.
    """
    import fcntl
    import os
    import tempfile
    import time
    from pathlib import Path

    if "card" in _CLAIMED:
        return _CLAIMED["card"]
    cards = visible_cards()
    if len(cards) < 2:
        return None
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("claim_worker_card: CUDA was started in this worker before it claimed a card; "
                           "the claim must come first (atomicrag.harness.run does it at the job's start)")
    folder = Path(lock_dir or os.environ.get("ATOMICRAG_GPU_LOCKS") or
                  Path(tempfile.gettempdir()) / f"atomicrag-gpu-locks-{os.getuid()}")
    folder.mkdir(parents=True, exist_ok=True)
    deadline, said = time.monotonic() + wait_s, False
    while True:
        for card in cards:
            fh = open(folder / f"card{card}.lock", "a+")  # noqa: SIM115 - held for the process's lifetime
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            _CLAIMED.update(card=card, handle=fh)
            os.environ["CUDA_VISIBLE_DEVICES"] = card
            log.info("this sweep worker (pid %d) runs on GPU %s of %s", os.getpid(), card, ",".join(cards))
            return card
        if time.monotonic() > deadline:
            raise RuntimeError(f"no free GPU among {','.join(cards)} after {wait_s:.0f} s "
                               f"(locks in {folder}): more sweep workers than cards")
        if not said:
            log.warning("every GPU (%s) is held by another sweep worker: waiting for one "
                        "(hydra.launcher.n_jobs is more than the cards)", ",".join(cards))
            said = True
        time.sleep(1.0)
