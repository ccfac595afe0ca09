"""What a saved index may set: the settings that shape the index, never the loading user's machine.

A saved index is data: a folder copied from someone else must not decide which programs run, which
server receives the user's API key, or which files are written. So its manifest carries, and
``AtomicRAG.load`` takes from it, only the settings listed in ``INDEX_SETTINGS``: how documents were
chunked and atomized, how the graph was built, which embedder made its vectors (its identity, not
how it runs), and how it is queried (retriever, decomposition, sieve, reader). Everything else comes
from the loading user's configuration (defaults, ``ATOMICRAG_*`` variables, what ``load`` is given):
the whole ``llm`` section (programs such as ``llm.server_python``, endpoints such as
``llm.base_url``, key variables, launch arguments), every ``paths.*`` (caches, data, results),
devices, ``embedder.trust_remote_code`` (running a model folder's code), ``retriever.reranker`` (a
model location) and ``fidelity.released_code`` (a folder that is read). A manifest that sets any of
those is not refused (every index saved before this rule carries its saver's whole config); the
keys are ignored and ``ignored_settings`` names the ones whose value would have differed.

Of the index settings, those that decided how the index was built (chunking, atomizer, graph, and
the embedder unless the user brings their own) cannot change when it is loaded:
``check_build_settings`` refuses a config that differs in any, rather than mixing two builds.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

from atomicrag.core.config import (
    AtomizerConfig,
    Config,
    DecomposeConfig,
    FidelityConfig,
    GraphConfig,
    ReaderConfig,
    RetrieverConfig,
    SieveConfig,
)


def _all_but(cls: type, *excluded: str) -> frozenset[str]:
    names = {f.name for f in dataclasses.fields(cls)}
    missing = set(excluded) - names
    if missing:  # a renamed field must not silently become allowed
        raise AssertionError(f"{cls.__name__} has no field(s) {sorted(missing)}")
    return frozenset(names - set(excluded))


# section -> the fields of it a saved index sets. A new field of a section listed with _all_but is
# allowed by default: tests/library/test_index_settings.py holds every allowed free-text field to a
# reviewed list, so a field that names a program, endpoint or file cannot slip in unnoticed.
INDEX_SETTINGS: dict[str, frozenset[str]] = {
    "dataset": frozenset({"chunk_tokens", "chunk_overlap", "chunk_tokenizer", "text_titles", "index_prefix",
                          "reader"}),
    "atomizer": _all_but(AtomizerConfig),
    "graph": _all_but(GraphConfig, "device"),
    # the released-code switches (embed_*) decide the vectors as pooling and prefixes do; an index
    # saved when they were fidelity.embed_* is read with them here (core.config_moves.move_fields)
    "embedder": frozenset({"name", "model", "pooling", "normalize", "query_prefix", "passage_prefix",
                           "max_length", "dim", "embed_pooling", "embed_instruction", "embed_recipe_models",
                           "embed_precision"}),
    "fidelity": _all_but(FidelityConfig, "released_code"),
    "retriever": _all_but(RetrieverConfig, "device", "reranker"),
    "decompose": _all_but(DecomposeConfig),
    "sieve": _all_but(SieveConfig),
    "reader": _all_but(ReaderConfig),
}
INDEX_TOP_LEVEL = frozenset({"seed"})


def index_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a config (``dataclasses.asdict`` form) a saved index carries."""
    out: dict[str, Any] = {k: v for k, v in config.items() if k in INDEX_TOP_LEVEL}
    for section, fields in INDEX_SETTINGS.items():
        values = config.get(section)
        if isinstance(values, dict):
            out[section] = {k: v for k, v in values.items() if k in fields}
    return out


def ignored_settings(saved: dict[str, Any], cfg: Config) -> list[str]:
    """Dotted keys of ``saved`` (a manifest's config) outside ``INDEX_SETTINGS`` whose value differs
    from ``cfg``'s, the config the index is opened with: what an older atomicrag would have taken
    from the file. Keys that are no field of ``Config`` (the research harness's fields that old
    manifests carry, such as ``experiment_name``) decide nothing and are not listed."""
    from atomicrag.core.config_moves import REMOVED_FIELDS

    library_fields = {f.name for f in dataclasses.fields(Config)}
    out = []
    for key, value in saved.items():
        if key not in library_fields:
            continue
        if not isinstance(value, dict):
            if key not in INDEX_TOP_LEVEL and value != getattr(cfg, key):
                out.append(key)
            continue
        section = getattr(cfg, key)
        allowed = INDEX_SETTINGS.get(key, frozenset())
        for name, v in value.items():
            if name in allowed or (key, name) in REMOVED_FIELDS:
                continue
            if not hasattr(section, name) or _plain(getattr(section, name)) != v:
                out.append(f"{key}.{name}")
    return out


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


# what decides how a saved index was built: these cannot change when it is loaded
BUILD_SECTIONS = ("atomizer", "graph")
BUILD_DATASET_FIELDS = ("chunk_tokens", "chunk_overlap", "chunk_tokenizer")


def _index_part(section: Any, name: str) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(section).items() if k in INDEX_SETTINGS[name]}


def check_build_settings(saved: Config, cfg: Config, *, byo_embedder: bool) -> None:
    """Raise ``ValueError`` naming every build setting of ``cfg`` that differs from the saved
    index's (and the ``ATOMICRAG_*`` variables that set them), instead of silently mixing builds."""
    # the index settings of each build section (a device or trust_remote_code is the user's to choose)
    diffs = [s for s in BUILD_SECTIONS if _index_part(getattr(saved, s), s) != _index_part(getattr(cfg, s), s)]
    diffs += [f"dataset.{f}" for f in BUILD_DATASET_FIELDS if getattr(saved.dataset, f) != getattr(cfg.dataset, f)]
    if not byo_embedder and _index_part(saved.embedder, "embedder") != _index_part(cfg.embedder, "embedder"):
        diffs.append("embedder")
    if diffs:
        env = sorted(k for k in os.environ if k.startswith("ATOMICRAG_") and "__" in k
                     and any(k[10:].lower().startswith(d.split(".")[0]) for d in diffs))
        hint = f" (set by the environment: {', '.join(env)})" if env else ""
        raise ValueError(f"these settings decide how the saved index was built and cannot change on load: "
                         f"{', '.join(diffs)}{hint}; build a new index with index(documents) instead")
