#!/usr/bin/env python
"""Tables 3/6 graph statistics of one corpus under several fidelity settings, side by side.

Builds (or loads from the stage cache) the graph under ``--fidelity`` first, then rebuilds the
graph's edges under each variant from the same atomize result. Embeddings are reused by text
(atoms and entities whose strings the first graph already embedded are not encoded again), so a
variant costs its structure plus the strings it embeds anew (e.g. canonical entity keys).

    .venv/bin/python scripts/bench.py fidelity_graph_stats --dataset 2wiki_dev --rechunk \
        --variant paper --variant paper+containment_keys=raw --variant reference_code+entity_nodes=all

A variant is a preset (``paper`` | ``reference_code``) with ``+field=value`` switches on top.
Writes ``results/graph_stats/<dataset>/fidelity_<atomizer>_<embedder>.{json,md}``.
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from graph_stats import DATA_FILES, load_chunks, script_config

from atomicrag.core.artifacts import write_json_atomic, write_text_atomic
from atomicrag.core.config import GraphConfig
from atomicrag.core.config_moves import move_override
from atomicrag.embed.memo import MemoEmbedder
from atomicrag.engine import ConfigModels, Engine
from atomicrag.graph.cached_build import atomize_cached
from atomicrag.graph.stats import TABLE3_COLUMNS, TABLE6_COLUMNS, graph_stats
from atomicrag.harness.provenance import Provenance

COLUMNS = list(dict.fromkeys(TABLE6_COLUMNS + TABLE3_COLUMNS + (
    "containment_per_atom", "atoms_without_entities", "isolated_entities", "unique_pairs")))


def variant_overrides(spec: str) -> list[str]:
    """``reference_code+containment_keys=canonical`` -> the Hydra overrides that compose it
    (``fidelity=reference_code``, ``graph.containment_keys=canonical``, ``fidelity.preset=custom``): each
    switch under the section of the stage that owns it."""
    preset, *switches = spec.split("+")
    bad = [sw for sw in switches if "=" not in sw]
    if bad:
        raise SystemExit(f"variant {spec!r}: {bad[0]!r} is not FIELD=VALUE")
    return [f"fidelity={preset}", *(move_override(f"fidelity.{sw}", warn=False) for sw in switches),
            *(["fidelity.preset=custom"] if switches else [])]


def variant_graph(groups: dict[str, str], spec: str, cache_dir: str) -> GraphConfig:
    """The variant's validated graph section (edge settings and released-code switches), composed
    like every other config."""
    return script_config(groups, variant_overrides(spec), cache_dir).graph


class FirstVectors:
    """The Engine's models for a variant: the first graph's embedder (memoised), no LLM."""

    def __init__(self, embedder: Any) -> None:
        self.embedder, self.llm = embedder, None


def markdown(rows: dict[str, dict[str, Any]]) -> str:
    lines = ["| fidelity | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for name, st in rows.items():
        cells = [f"{st[c]:,.2f}" if isinstance(st[c], float) else f"{st[c]:,}" for c in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="2wiki_dev")
    ap.add_argument("--atomizer", default="sentence")
    ap.add_argument("--embedder", default="minilm_onnx")
    ap.add_argument("--rechunk", action="store_true", help="chunk passages with the dataset's chunker (as runs do)")
    ap.add_argument("--variant", action="append", default=[], help="preset[+field=value...] (repeatable)")
    ap.add_argument("--cache-dir", default=str(ROOT / "cache"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    prov = Provenance.start()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # reference_code keeps only triple subjects/objects as entities: a triple-less atomizer (sentence)
    # then has no entity node at all, so its containment-key drop shows with entity_nodes=all
    variants = args.variant or ["paper", "paper+containment_keys=raw", "reference_code+entity_nodes=all",
                                "reference_code"]

    groups = {"dataset": args.dataset, "atomizer": args.atomizer, "embedder": args.embedder}
    base = script_config(groups, variant_overrides(variants[0]), args.cache_dir)
    dcfg = base.dataset
    chunks, n_passages = load_chunks(base, args.rechunk)
    models = ConfigModels(base)
    embedder = models.embedder
    t0 = time.perf_counter()
    # through the Engine's stage cache: cached after the first run
    first = Engine(base, models, cache_dir=base.paths.cache_dir, dataset_name=dcfg.name).index_chunks(chunks).graph
    # the variants' vectors: the first graph's, as float32 (as stored); new strings are encoded once
    cached = MemoEmbedder(embedder, dtype=torch.float32)
    if first.atom_embeddings is not None:
        cached.seed_passages((a.text, v) for a, v in zip(first.atoms, first.atom_embeddings))
    if first.entity_embeddings is not None:
        cached.seed_passages((t, v) for t, v in zip(first.entity_texts, first.entity_embeddings))
    result, _ = atomize_cached(chunks, base, None, base.paths.cache_dir, dcfg.name)
    rows: dict[str, dict[str, Any]] = {variants[0]: graph_stats(first)}
    seconds = {variants[0]: round(time.perf_counter() - t0, 1)}
    for spec in variants[1:]:
        t = time.perf_counter()
        # the variant's own embedder switches (pooling, instruction) would change every vector:
        # this table varies the graph switches, so vectors come from the first graph's embedder
        vcfg = dataclasses.replace(base, graph=variant_graph(groups, spec, args.cache_dir))
        g = Engine(vcfg, FirstVectors(cached)).update(None, result.atoms, result.triples).graph
        rows[spec] = graph_stats(g)
        seconds[spec] = round(time.perf_counter() - t, 1)
    out = Path(args.out or ROOT / "results" / "graph_stats" / dcfg.name)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"fidelity_{args.atomizer}_{args.embedder}"
    report = {"dataset": dcfg.name, "split": dcfg.split, "passages": n_passages, "chunks": len(chunks),
              "atomizer": args.atomizer, "embedder": embedder.name, "variants": rows, "seconds": seconds,
              "strings_embedded_anew": cached.encoded,
              "atomize_stats": first.meta.get("atomize_stats", {}),  # window_repeats_merged: repeats kept once
              "provenance": prov.finish(base, data_files=DATA_FILES, uses_llm=False)}
    write_json_atomic(out / f"{stem}.json", report)
    md = markdown(rows)
    write_text_atomic(out / f"{stem}.md", md)
    print(md)
    print(f"wrote {out / stem}.json/.md ({len(chunks)} chunks; seconds per variant {seconds})")


if __name__ == "__main__":
    main()
