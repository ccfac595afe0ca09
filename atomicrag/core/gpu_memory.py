"""GPU memory shared by the stages of one run: the LLM server's share, and out-of-memory errors
that say which stage ran out and which setting to lower.

A co-located vLLM server takes ``gpu_memory_utilization`` of the card when it starts, whatever the
rest of the run will need; the harness sets that fraction from the run plan's estimate of the
embedder, graph and PPR blocks (``server_memory_fraction``), and an explicit setting still wins.
A CUDA out-of-memory error inside a stage is re-raised as :class:`GpuOutOfMemory`, naming the
stage and its setting, instead of a bare allocator message.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

GIB = 1 << 30
HEADROOM_BYTES = 2 * GIB  # CUDA context, allocator fragmentation, the reader's tokenizer tensors
MIN_FRACTION, MAX_FRACTION = 0.30, 0.92  # below 0.3 a 7B model has no KV cache; above 0.92 vLLM itself warns
DEFAULT_FRACTION = 0.9  # a server started outside the harness (no plan): vLLM's usual share

# the setting to lower when a stage runs out of GPU memory (stage names: Accountant modules and
# graph-build timings)
OOM_SETTINGS: dict[str, str] = {
    "chunk": "embedder.batch_size",
    "index": "embedder.batch_size (or embedder.max_length)",
    "embed_atoms": "embedder.batch_size (or embedder.max_length)",
    "embed_entities": "embedder.batch_size (or embedder.max_length)",
    "synonym_knn": "graph.synonym_batch (or graph.device=cpu)",
    "structure": "graph.device=cpu",
    "adjacency": "graph.device=cpu",
    "graph": "graph.synonym_batch (or graph.device=cpu)",
    "retrieve": "retriever.query_batch (or retriever.device=cpu)",
    "decompose": "llm.max_model_len (an in-process LLM) or llm.gpu_memory_utilization",
    "sieve": "llm.max_model_len (an in-process LLM) or llm.gpu_memory_utilization",
    "answer": "reader.context_tokens or llm.max_model_len (an in-process LLM)",
    "atomize": "llm.max_model_len (an in-process LLM) or llm.gpu_memory_utilization",
    "judge": "judge.embedder.batch_size",
}
_OOM_TEXT = re.compile(r"CUDA out of memory|CUBLAS_STATUS_ALLOC_FAILED|out of memory on device", re.I)
# what a vLLM server's log says when the card has no room for its weights or KV cache
SERVER_OOM_TEXT = re.compile(r"CUDA out of memory|No available memory for the cache blocks|"
                             r"not enough (?:GPU )?memory|insufficient memory|less than the model's", re.I)


class GpuOutOfMemory(RuntimeError):
    """A stage ran out of GPU memory; the message names the stage and the setting to lower."""


def is_out_of_memory(exc: BaseException) -> bool:
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return isinstance(exc, RuntimeError) and bool(_OOM_TEXT.search(str(exc)))


@contextmanager
def oom_names_stage(stage: str) -> Iterator[None]:
    """Re-raise a CUDA out-of-memory error of the block as :class:`GpuOutOfMemory` for ``stage``."""
    try:
        yield
    except GpuOutOfMemory:
        raise  # an inner stage already named itself
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        setting = OOM_SETTINGS.get(stage, "the stage's batch size, or its device=cpu")
        raise GpuOutOfMemory(f"stage {stage!r} ran out of GPU memory ({first[:200]}); lower {setting}, "
                             "or give the LLM server less (llm.gpu_memory_utilization)") from exc


def server_memory_fraction(total_bytes: int, others_bytes: int, headroom_bytes: int = HEADROOM_BYTES) -> float:
    """The share of a card of ``total_bytes`` an LLM server may take when the rest of the run needs
    ``others_bytes`` on it (plus ``headroom_bytes``), clamped to [MIN_FRACTION, MAX_FRACTION]."""
    if total_bytes <= 0:
        raise ValueError(f"total GPU memory must be positive, got {total_bytes}")
    share = (total_bytes - others_bytes - headroom_bytes) / total_bytes
    return round(min(MAX_FRACTION, max(MIN_FRACTION, share)), 3)


def server_oom_hint(log_text: str) -> str | None:
    """The line to add to a vLLM start-up failure whose log shows the card was too small."""
    if not SERVER_OOM_TEXT.search(log_text):
        return None
    return ("the server ran out of GPU memory at start-up: lower llm.max_model_len, or raise "
            "llm.gpu_memory_utilization if nothing else uses the card (unset, the harness sets it "
            "from the run plan's needs), or use a smaller model / llm.tensor_parallel_size > 1")
