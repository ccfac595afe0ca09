#!/usr/bin/env python
"""Ablation and grid search of the hybrid offline retriever on one half of 2Wiki DEV.

Loads (or builds) the cached sentence-atom graph once through ``Engine.index_passages`` and runs
each retriever variant through ``Engine.retrieve`` over it (seconds each), printing passage Recall@2/@5 with 95% bootstrap intervals and
ms per question. Choose on the even half (``--half even``); report the odd half (``--half odd``),
which the search never saw (experiments/retrieval_2wiki/README.md).

    python scripts/bench.py tune_retrieval --half even --rows             # the ablation rows
    python scripts/bench.py tune_retrieval --half even --base '{"passage_nodes": true}' \\
        --grid passage_seed_weight=0.1,0.5,1 passage_edge_weight=0.5,1
    python scripts/bench.py tune_retrieval --half odd --rows --json results/retrieval_2wiki/ablation_half1.json
    python scripts/bench.py tune_retrieval --half even --search --json results/retrieval_2wiki/tune/search_half0.json
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATOMICRAG_NO_PROGRESS", "1")

from qa_stats import HALF_CHOICES, bootstrap, half_name, select_half, write_record

from atomicrag.core.compose import load_config
from atomicrag.core.config import Config
from atomicrag.data.loaders import load_dataset
from atomicrag.embed.factory import build_embedder
from atomicrag.embed.memo import MemoEmbedder
from atomicrag.engine.engine import Engine
from atomicrag.evaluate.metrics import recall_at_k
from atomicrag.harness.provenance import Provenance

ROOT = Path(__file__).resolve().parents[1]
# the paper's values: conf/retriever/ppr, which sets no field away from the dataclass defaults
DEFAULTS = dataclasses.asdict(load_config({"retriever": "ppr"}, env_prefix=None).retriever)


def option_fields(option: str) -> dict[str, Any]:
    """The fields a ``conf/retriever`` option sets away from the dataclass defaults, composed by
    ``load_config`` (so an option extending another through ``defaults:`` has both's fields)."""
    full = dataclasses.asdict(load_config({"retriever": option}, env_prefix=None).retriever)
    return {k: v for k, v in full.items() if v != DEFAULTS[k]}


PPR_MINILM = option_fields("ppr_minilm")


def ablation_rows() -> list[tuple[str, dict[str, Any]]]:
    """The README's ablation rows: anchors, the chosen preset minus one lever at a time, the preset,
    and the preset plus each lever the even half rejected."""
    rows: list[tuple[str, dict[str, Any]]] = [("dense atoms (w/o ERGR)", {"name": "dense"}),
                                               ("ppr_minilm", dict(PPR_MINILM))]
    best = option_fields("hybrid")
    # one lever at a time off the chosen preset, then the preset itself
    for field, off in (("lexical_weight", 0.0), ("passage_nodes", False), ("query_entities", "spacy"),
                       ("passage_ranking", "best_atom")):
        if best.get(field, DEFAULTS[field]) != off:
            cfg = dict(best, **{field: off})
            if field == "passage_nodes":
                cfg.update(passage_seed_weight=0.0, passage_ranking="atom_sum"
                           if best.get("passage_ranking") == "node" else best.get("passage_ranking"))
            rows.append((f"hybrid without {field}", cfg))
    rows.append(("hybrid (retriever=hybrid)", best))
    if best.get("passage_ranking") == "bridge":  # the bridge ranking alone over ppr_minilm
        rows.append(("ppr_minilm + bridge ranking", dict(PPR_MINILM, passage_ranking="bridge",
                                                          bridge_weight=best.get("bridge_weight", 1.0))))
    if best.get("query_entities") == "spacy_cased":  # the case filter alone
        rows.append(("hybrid with spacy_idf query entities", dict(best, query_entities="spacy_idf")))
    # levers rejected on the even half, shown on the odd half too (added to the preset)
    rows.append(("hybrid + passage nodes (node ranking, seed 0.5)",
                 dict(best, passage_nodes=True, passage_ranking="node", passage_seed_weight=0.5)))
    rows.append(("hybrid + fusion ranking (dense 0.5, bm25 0.5)",
                 dict(best, passage_ranking="fusion", fusion_dense_weight=0.5, fusion_lexical_weight=0.5)))
    return rows


def search_rows() -> list[tuple[str, dict[str, Any]]]:
    """The even-half search that chose ``hybrid``, round by round (experiments/retrieval_2wiki/README.md):
    (1) one lever at a time over ``ppr_minilm``; (2) BM25 with document-frequency-filtered query
    entities and their neighbours; (3) the bridge ranking's weight with either query-entity filter;
    (4) restart x atom seed weight around the chosen point (``retriever=hybrid``)."""
    def row(rnd: int, **fields: Any) -> tuple[str, dict[str, Any]]:
        return f"round {rnd}: {json.dumps(fields)}", {**PPR_MINILM, **fields}

    both = {"lexical_weight": 0.3, "query_entities": "spacy_idf"}
    rows = [row(1)]
    rows += [row(1, **f) for f in (
        {"lexical_weight": 0.3}, {"query_entities": "spacy_idf"},
        {"passage_nodes": True, "passage_ranking": "node", "passage_seed_weight": 0.5},
        {"passage_ranking": "atom_sum"}, {"passage_ranking": "fusion", "fusion_dense_weight": 0.5},
        {"passage_ranking": "fusion", "fusion_dense_weight": 0.5, "fusion_lexical_weight": 0.5})]
    rows += [row(2, **{**both, **f}) for f in ({}, {"lexical_weight": 0.5}, {"query_entity_max_df": 0.01},
                                           {"entity_sim_threshold": 0.8}, {"atom_seed_weight": 1.0})]
    rows += [row(3, **{**both, "passage_ranking": "bridge", "query_entities": qe, "bridge_weight": w})
             for qe in ("spacy_idf", "spacy_cased") for w in (0.7, 0.9, 1.0, 1.2)]
    chosen = option_fields("hybrid")
    rows += [(f"round 4: {json.dumps({'damping': d, 'atom_seed_weight': a})}", dict(chosen, damping=d, atom_seed_weight=a))
             for d in (0.5, 0.7, 0.85) for a in (0.25, 0.5, 1.0)]
    return rows


@dataclasses.dataclass
class SharedModels:
    """The Engine's models for every variant: one memoising embedder (a question is embedded once
    across variants), no LLM (retrieval only, reader=none)."""

    embedder: MemoEmbedder
    llm: Any = None


def with_retriever(base: Config, fields: dict[str, Any]) -> Config:
    d = dataclasses.asdict(base)
    # over the dataclass defaults (the paper's values), not the library's default preset
    d["retriever"] = {**DEFAULTS, **fields}
    return load_config(d)


def evaluate(engine: Engine, index: Any, questions: list[Any], timing: bool) -> dict[str, Any]:
    """Recall@2/5 (with 95% intervals) and ms per question of one variant, through ``Engine.retrieve``."""
    if timing:  # warm-up and no memo: the ms/question a user sees (spaCy, embedding, BM25, PPR)
        engine.retrieve(index, questions[:8])
        engine.models.embedder.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    traces = engine.retrieve(index, questions).traces
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out: dict[str, Any] = {"n": len(questions), "ms_per_q": round(1000 * wall / len(questions), 1),
                           "cpu_ms_per_q": round(1000 * cpu / len(questions), 1)}
    for k in (2, 5):
        per_q = [recall_at_k(t.retrieved_passages, q.supporting_ids, k) or 0.0 for q, t in zip(questions, traces)]
        out[f"R@{k}"] = round(100 * sum(per_q) / len(per_q), 1)
        out[f"R@{k}_ci95"] = bootstrap(per_q)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="even", choices=HALF_CHOICES,
                    help="DEV questions: even (0, where settings are chosen), odd (1, reported) or all")
    ap.add_argument("--rows", action="store_true", help="run the README's ablation rows")
    ap.add_argument("--search", action="store_true", help="run the even-half search that chose hybrid (rounds 1-4)")
    ap.add_argument("--base", default="{}", help="JSON retriever fields over ppr_minilm for --grid")
    ap.add_argument("--grid", nargs="*", default=[], help="field=v1,v2 ... (JSON values), product over fields")
    ap.add_argument("--point", action="append", default=[], help="JSON retriever fields over ppr_minilm (repeatable)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--timing", action="store_true", help="time each variant cold (no memo of entities/embeddings)")
    ap.add_argument("--resolve", action="store_true", help="atomizer.resolve_subject=true (self-contained atoms; "
                    "indexes the corpus with it on first use)")
    ap.add_argument("--entity-filter", action="store_true", help="atomizer.entity_filter=true (no numbers-only or "
                    "stop-word mentions; indexes the corpus once more, embeddings of unchanged texts reused)")
    ap.add_argument("--split", default="dev", help="dev (the benchmark) or smoke (a plumbing check)")
    ap.add_argument("--data-dir", default="auto", help="paths.data_dir (auto: ./data, ../shared/data, the shipped sets)")
    ap.add_argument("--cache-dir", default="cache")
    args = ap.parse_args(argv)
    prov = Provenance.start()
    base = load_config({
        "dataset": {"name": "2wikimultihopqa", "split": args.split, "format": "normalized", "reader": "precise"},
        "paths": {"data_dir": args.data_dir},
        "embedder": {"name": "onnx", "model": "minilm", "batch_size": 32}, "atomizer": {"name": "sentence", "resolve_subject": args.resolve,
                     "entity_filter": args.entity_filter},
        "reader": {"name": "none"}, "retriever": {"name": "ppr"},
    })
    data = load_dataset(base.dataset, base.paths.resolved_data_dir(dataset=base.dataset))
    questions = select_half(data.questions, args.half)
    models = SharedModels(MemoEmbedder(build_embedder(base.embedder, base.fidelity)))
    # one index (the cached sentence-atom graph), every variant retrieving over it through Engine
    index = Engine(base, models, cache_dir=args.cache_dir, dataset_name=data.name).index_passages(data.passages)
    nodes = sum(g.graph.num_nodes for g in index.graphs.values())
    print(f"{len(questions)} questions ({half_name(args.half)} half), graph of {nodes:,} nodes; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    points: list[tuple[str, dict[str, Any]]] = ablation_rows() if args.rows else []
    points += search_rows() if args.search else []
    points += [(p, {**PPR_MINILM, **json.loads(p)}) for p in args.point]
    if args.grid:
        fields = [g.split("=", 1) for g in args.grid]
        start = {**PPR_MINILM, **json.loads(args.base)}
        for combo in itertools.product(*[[json.loads(v) for v in vals.split(",")] for _, vals in fields]):
            point = dict(start, **{f: v for (f, _), v in zip(fields, combo)})
            points.append((json.dumps({f: v for (f, _), v in zip(fields, combo)}), point))
    results = []
    for label, fields in points:
        res = evaluate(Engine(with_retriever(base, fields), models), index, questions, args.timing)
        results.append({"label": label, "retriever": fields, "resolve_subject": args.resolve,
                        "entity_filter": args.entity_filter, **res})
        print(f"{label:60s} R@2 {res['R@2']:5.1f} {res['R@2_ci95']}  R@5 {res['R@5']:5.1f} {res['R@5_ci95']}  "
              f"{res['ms_per_q']:6.1f} ms/q", flush=True)
    if args.json:
        write_record(args.json, {"half": half_name(args.half), "load_1min": os.getloadavg()[0], "results": results},
                     prov.finish(base, data_files=data.files, uses_llm=False))


if __name__ == "__main__":
    main()
