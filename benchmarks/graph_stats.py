#!/usr/bin/env python
"""Atom-Entity Graph statistics (paper Tables 3 and 6) for one dataset.

Builds the graph through the stage caches (or loads it when cached) and prints/writes the
statistics as JSON and Markdown. The config is composed as the library composes it: the group
options named by the flags, then ``--set`` Hydra overrides. The record also says what the atomizer
merged (``window_merge``: a sentence that two overlapping windows repeat is one atom).

    .venv/bin/python scripts/bench.py graph_stats --dataset medical_dev --atomizer sentence --embedder minilm
    # one released-code switch on its own (file name gets the tag):
    .venv/bin/python scripts/bench.py graph_stats --dataset 2wiki_dev --rechunk --set graph.containment_keys=raw
    # a dataset's original documents, untitled, cut by the chunker (as a user's files are):
    .venv/bin/python scripts/bench.py graph_stats --dataset medical_dev --raw
"""
from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from atomicrag.core.artifacts import write_json_atomic, write_text_atomic
from atomicrag.core.compose import load_config
from atomicrag.core.config import Config
from atomicrag.core.schemas import Chunk, Passage
from atomicrag.engine import ConfigModels, Engine
from atomicrag.graph.stats import TABLE6_COLUMNS, graph_stats, stats_markdown


def script_config(groups: dict[str, str], overrides: list[str], cache_dir: str | None = None) -> Config:
    """The library's config for these group options (``{"dataset": "2wiki_dev"}``) and Hydra
    overrides (``graph.containment_keys=raw``), composed as the library and the harness compose
    it (group files that extend others included); a bad option or key exits naming it."""
    paths = {"paths": {"cache_dir": cache_dir}} if cache_dir else {}
    try:
        return load_config({**groups, **paths}, overrides=overrides)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc


def passages_as_chunks(passages: list[Passage]) -> list[Chunk]:
    """One chunk per passage (corpora such as Graph-Bench's are already the authors' chunks)."""
    return [Chunk(id=p.id, passage_id=p.id, text=p.text, title=p.title, end_char=len(p.text)) for p in passages]


DATA_FILES: list[str] = []  # the files load_chunks read (for the record's provenance)


def load_chunks(cfg: Config, rechunk: bool, raw: bool = False) -> tuple[list[Chunk], int]:
    """(chunks, number of passages) of ``cfg.dataset``: its corpus rows as they are, or cut by the
    dataset's chunker (``rechunk``); ``raw``: its original documents, untitled and cut by the
    chunker, as a user's files are (Graph-Bench's ``corpus_raw.jsonl``)."""
    from atomicrag.data.loaders import load_dataset, read_raw_documents
    from atomicrag.data.token_windows import chunk_passages

    data_dir = cfg.paths.resolved_data_dir(ROOT, dataset=cfg.dataset)
    if raw:
        passages = read_raw_documents(data_dir / cfg.dataset.name)
        DATA_FILES[:] = [str(data_dir / cfg.dataset.name / "corpus_raw.jsonl")]
        return chunk_passages(passages, cfg.dataset), len(passages)
    ds = load_dataset(cfg.dataset, data_dir)
    DATA_FILES[:] = ds.files
    if rechunk:
        return chunk_passages(ds.passages, cfg.dataset), len(ds.passages)
    return passages_as_chunks(ds.passages), len(ds.passages)


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 ** 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="medical_dev", help="conf/dataset/<name>.yaml (e.g. 2wiki_dev, medical_dev)")
    ap.add_argument("--split", default=None, help="override the dataset split (smoke | dev | heldout | all)")
    ap.add_argument("--atomizer", default="sentence", help="conf/atomizer/<name>.yaml")
    ap.add_argument("--embedder", default="minilm", help="conf/embedder/<name>.yaml (fake for a quick run)")
    ap.add_argument("--fidelity", default="paper", help="conf/fidelity/<name>.yaml: paper | reference_code")
    ap.add_argument("--llm", default="fake", help="conf/llm/<name>.yaml, for the llm / vocabulary atomizers")
    ap.add_argument("--rechunk", action="store_true",
                    help="chunk passages with the dataset's chunker (default: one chunk per corpus row)")
    ap.add_argument("--raw", action="store_true",
                    help="index the dataset's original documents (corpus_raw.jsonl), untitled, chunked")
    ap.add_argument("--batch-size", type=int, default=None, help="embedder batch size override")
    ap.add_argument("--nlp-processes", type=int, default=None, help="spaCy processes override")
    ap.add_argument("--noun-chunks", action="store_true", help="add spaCy noun chunks as entities")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a Hydra override on top of the groups (repeatable), e.g. graph.containment_keys=raw; "
                         "its fidelity switches name the record (sentence_minilm_paper__containment_keys-raw)")
    ap.add_argument("--cache-dir", default=str(ROOT / "cache"))
    ap.add_argument("--out", default=None, help="output folder (default results/graph_stats/<dataset>)")
    args = ap.parse_args()
    from atomicrag.harness.provenance import Provenance

    prov = Provenance.start()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    overrides = [*args.set]
    if args.split:
        overrides.append(f"dataset.split={args.split}")
    if args.batch_size:
        overrides.append(f"embedder.batch_size={args.batch_size}")
    if args.nlp_processes:
        overrides.append(f"atomizer.nlp_processes={args.nlp_processes}")
    if args.noun_chunks:
        overrides.append("atomizer.noun_chunks=true")
    cfg = script_config({"dataset": args.dataset, "atomizer": args.atomizer, "embedder": args.embedder,
                         "fidelity": args.fidelity, "llm": args.llm}, overrides, args.cache_dir)
    dcfg = cfg.dataset
    # the switches that change the graph name the record; where files live does not
    tag = "".join(f"+{item.removeprefix('fidelity.')}" for item in args.set if not item.startswith("paths."))
    chunks, n_passages = load_chunks(cfg, args.rechunk, args.raw)

    # the Engine indexes through the stage cache (an LLM only when the atomizer declares one)
    models = ConfigModels(cfg)
    t0 = time.perf_counter()
    try:
        graph = Engine(cfg, models, cache_dir=cfg.paths.cache_dir, dataset_name=dcfg.name).index_chunks(chunks).graph
        embedder, uses_llm = models.embedder, models.llm_built
    finally:
        models.close()
    seconds = time.perf_counter() - t0
    st = graph_stats(graph)
    atomized = graph.meta.get("atomize_stats", {})
    merged = atomized.get("window_repeats_merged", 0)
    row = f"{dcfg.name}{' raw' if args.raw else ''} ({args.atomizer}{'+noun chunks' if cfg.atomizer.noun_chunks else ''}, " \
          f"{args.embedder}, {args.fidelity}{tag})"
    per_passage = Counter(c.passage_id for c in chunks)
    report = {"dataset": dcfg.name, "split": dcfg.split, "passages": n_passages, "chunks": len(chunks),
              "passages_in_several_chunks": sum(1 for n in per_passage.values() if n > 1),
              "atomizer": args.atomizer, "embedder": embedder.name, "fidelity": args.fidelity + tag,
              "stats": st, "index_seconds": round(seconds, 2), "peak_rss_gb": round(peak_rss_gb(), 2),
              "graph_key": graph.meta.get("graph_key"), "timings": graph.meta.get("timings"),
              "atomize_stats": atomized, "documents": "raw" if args.raw else "rechunked" if args.rechunk else "rows",
              # a sentence that overlapping windows repeat is one atom (atomizer.merge_window_repeats)
              "window_merge": {"atoms_before": st["atoms"] + merged, "merged": merged, "atoms_after": st["atoms"]},
              "failed_chunks": graph.meta.get("failed_chunks", 0),
              "provenance": prov.finish(cfg, data_files=DATA_FILES, uses_llm=uses_llm)}
    out = Path(args.out or ROOT / "results" / "graph_stats" / dcfg.name)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{'raw_' if args.raw else ''}{args.atomizer}{'_nc' if cfg.atomizer.noun_chunks else ''}" \
           f"_{args.embedder}_{args.fidelity}"
    stem += tag.replace("+", "__").replace("=", "-")
    write_json_atomic(out / f"{stem}.json", report)
    md = stats_markdown({row: st})
    write_text_atomic(out / f"{stem}.md", md)
    print(json.dumps({k: st[k] for k in TABLE6_COLUMNS}, indent=None))
    print(md)
    print(f"wrote {out / stem}.json/.md  ({len(chunks)} chunks, {seconds:.1f}s, peak {peak_rss_gb():.2f} GB)")


if __name__ == "__main__":
    main()
