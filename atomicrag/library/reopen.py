"""Opening a saved index: the config it is queried with, and the embedder it is read with.

A saved index is data: only the settings ``library.index_settings.INDEX_SETTINGS`` lists are taken
from its manifest; programs, endpoints, keys, caches, paths and devices come from the loading
user's configuration, and a manifest that sets them gets a warning naming the keys it ignores.
The settings that decided how the index was built come from the index alone; what a user passes
to ``AtomicRAG.load`` (a dict, a ``Config`` or override strings) may change query-time settings
only, and a conflicting build setting is an error (``library.index_settings.check_build_settings``)."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from atomicrag.core.compose import load_config, to_overrides
from atomicrag.core.config import Config
from atomicrag.core.config_moves import move_fields
from atomicrag.library.index_settings import check_build_settings, ignored_settings, index_settings

log = logging.getLogger("atomicrag")


def reopen_config(saved: dict[str, Any], config: Config | dict | None, overrides: Sequence[str], *,
                  byo_embedder: bool) -> Config:
    """The config to query a saved index with. ``saved``: the manifest's config; ``config``: a dict
    of overrides on it (a group option named there starts that group afresh, e.g.
    ``{"retriever": "dense"}``) or a full ``Config``; ``overrides``: Hydra override strings applied
    after ``config``. ``ATOMICRAG_*`` variables apply to the result only, so one that conflicts with
    a build setting is caught instead of rewriting the manifest. Only the manifest's index settings
    are read (``index_settings``); what else it sets is ignored, with a warning naming the keys."""
    # indexes saved before the harness's fields (experiment_name, judge, logger, ...) left Config
    # carry them in their manifest: they decide nothing about the index
    library_fields = {f.name for f in dataclasses.fields(Config)}
    # manifests saved before a fidelity switch moved to its stage's section; the judge's switches
    # (acc_weight, judge_replies, ...) have no section in the library's config and decide nothing here
    saved = move_fields(saved, sections=library_fields)
    built = load_config(index_settings({k: v for k, v in saved.items() if k in library_fields}), env_prefix=None)
    if isinstance(config, Config):
        cfg = load_config(config, overrides=overrides)
    else:
        cfg = load_config(dataclasses.asdict(built), overrides=[*to_overrides(config or {}), *overrides])
    check_build_settings(built, cfg, byo_embedder=byo_embedder)
    ignored = ignored_settings(saved, cfg)
    if ignored:
        named = ", ".join(ignored[:10]) + (f" and {len(ignored) - 10} more" if len(ignored) > 10 else "")
        log.warning("the saved index's manifest sets %s: ignored (a saved index is data; programs, endpoints, "
                    "keys, caches, paths and devices come from your configuration, not from the index)", named)
    return cfg


def check_reopen_embedder(embedder: Any, saved: dict[str, Any]) -> None:
    """A different dimension than the index's vectors is an error; the same dimension from another
    model is a warning (the vectors would not compare)."""
    want = saved.get("dim")
    if want is not None and embedder.dim != want:
        raise ValueError(f"embedder {embedder.name!r} has dim={embedder.dim}, but the index was built "
                         f"with {saved.get('name')!r} (dim={want}); load it with that embedder")
    if saved.get("name") and embedder.name != saved["name"]:
        log.warning("loading an index built with embedder %r using %r: same dimension, but vectors from "
                    "different models do not compare", saved["name"], embedder.name)
