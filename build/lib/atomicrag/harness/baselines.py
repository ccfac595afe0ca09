"""Baseline rows of a run (``Config.baselines``), computed once per sweep, not once per sweep point.

A baseline is a set of field overrides on the main configuration. Its run is keyed by the
config it actually reads: fields its stages never look at (the main row's PPR damping, seeding,
atomizer, ... for the dense-passage row) are reset to their defaults before the run folder is
named, so every point of a sweep over such a field maps to the same baseline run. That run is
computed by the first point and reused by the others: from its finished run folder, and within
one process from a memo (which also covers ``overwrite=true`` sweeps).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from atomicrag.core.config import Config, DecomposeConfig, RetrieverConfig, SieveConfig
from atomicrag.harness.rows import BASELINES, baseline_reads

_MEMO: dict[str, dict[str, Any]] = {}  # config hash -> metrics of a baseline run in this process


def with_overrides(cfg: Config, overrides: dict[str, Any]) -> Config:
    new = copy.deepcopy(cfg)
    for dotted, value in overrides.items():
        section, attr = dotted.split(".", 1)
        setattr(getattr(new, section), attr, value)
        getattr(new, section).__post_init__()
    return new


def baseline_config(cfg: Config, name: str) -> Config:
    """The configuration of baseline ``name`` for main config ``cfg``, reduced to what it reads."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
    b = with_overrides(cfg, BASELINES[name])
    b.run_name = None  # its own run folder, never the main row's
    b.retriever = RetrieverConfig(**{f: getattr(b.retriever, f) for f in baseline_reads(name)})
    if name == "dense_passage":  # no atoms, no graph, no decomposition or sieve
        from atomicrag.core.config import AtomizerConfig, GraphConfig

        b.atomizer, b.graph = AtomizerConfig(), GraphConfig()
        b.decompose, b.sieve = DecomposeConfig(name="none"), SieveConfig(name="none")
    return b


def run_baseline(bcfg: Config, run: Callable[[Config], dict[str, Any]]) -> dict[str, Any]:
    """``run(bcfg)`` once per process and config (the run folder covers later processes)."""
    from atomicrag.harness.tracking import config_hash

    key = f"{bcfg.experiment_name}/{bcfg.dataset.name}/{bcfg.dataset.split}/{config_hash(bcfg)}"
    if key not in _MEMO:
        _MEMO[key] = run(bcfg)
    return copy.deepcopy(_MEMO[key])

