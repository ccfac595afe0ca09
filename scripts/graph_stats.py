#!/usr/bin/env python
"""Atom-Entity Graph statistics (paper Tables 3 and 6) for one dataset.

Builds the graph through the stage caches (or loads it when cached) and prints/writes the
statistics as JSON and Markdown.

    .venv/bin/python scripts/graph_stats.py --dataset medical_dev --atomizer sentence --embedder minilm
    # one released-code switch on its own (file name gets the tag):
    .venv/bin/python scripts/graph_stats.py --dataset 2wiki_dev --rechunk --set fidelity.containment_keys=raw
"""
from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from omegaconf import OmegaConf

from atomicrag.core.config import (
    AtomizerConfig,
    Config,
    DatasetConfig,
    EmbedderConfig,
    FidelityConfig,
    GraphConfig,
    LLMConfig,
    PathsConfig,
)
from atomicrag.core.schemas import Chunk, Passage
from atomicrag.graph.cached_build import index_corpus
from atomicrag.graph.stats import TABLE6_COLUMNS, graph_stats, stats_markdown


def conf_group(group: str, name: str, cls: type) -> Any:
    """``conf/<group>/<name>.yaml`` validated into its dataclass."""
    path = ROOT / "conf" / group / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "conf" / group).glob("*.yaml")))
        raise SystemExit(f"no conf/{group}/{name}.yaml; known: {known}")
    merged = OmegaConf.merge(OmegaConf.structured(cls), OmegaConf.load(path))
    return OmegaConf.to_object(merged)


def read_passages(path: Path) -> list[Passage]:
    try:
        from atomicrag.data.loaders import read_passages_jsonl
    except ImportError:  # the data package is not there yet: read the normalised jsonl directly
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        return [Passage(id=r["id"], text=r["text"], title=r.get("title", ""), corpus=r.get("corpus")) for r in rows]
    return read_passages_jsonl(path)


def passages_as_chunks(passages: list[Passage]) -> list[Chunk]:
    """One chunk per passage (corpora such as Graph-Bench's are already the authors' chunks)."""
    return [Chunk(id=p.id, passage_id=p.id, text=p.text, title=p.title, end_char=len(p.text)) for p in passages]


DATA_FILES: list[str] = []  # the files load_chunks read (for the record's provenance)


def load_chunks(dataset_cfg: Any, data_dir: Path, rechunk: bool) -> tuple[list[Chunk], int]:
    """(chunks, number of passages) of a dataset config."""
    from atomicrag.data.loaders import load_dataset

    ds = load_dataset(dataset_cfg, data_dir)
    DATA_FILES[:] = ds.files
    if rechunk:
        from atomicrag.data.token_windows import chunk_passages

        return chunk_passages(ds.passages, dataset_cfg), len(ds.passages)
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
    ap.add_argument("--batch-size", type=int, default=None, help="embedder batch size override")
    ap.add_argument("--nlp-processes", type=int, default=None, help="spaCy processes override")
    ap.add_argument("--noun-chunks", action="store_true", help="add spaCy noun chunks as entities")
    ap.add_argument("--set", action="append", default=[], metavar="fidelity.FIELD=VALUE",
                    help="one fidelity field on top of --fidelity (repeatable), e.g. fidelity.containment_keys=raw")
    ap.add_argument("--cache-dir", default=str(ROOT / "cache"))
    ap.add_argument("--out", default=None, help="output folder (default results/graph_stats/<dataset>)")
    args = ap.parse_args()
    from atomicrag.harness.provenance import Provenance

    prov = Provenance.start()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    dcfg: DatasetConfig = conf_group("dataset", args.dataset, DatasetConfig)
    if args.split:
        dcfg.split = args.split
    cfg = Config(dataset=dcfg, atomizer=conf_group("atomizer", args.atomizer, AtomizerConfig),
                 embedder=conf_group("embedder", args.embedder, EmbedderConfig),
                 fidelity=conf_group("fidelity", args.fidelity, FidelityConfig), graph=GraphConfig(),
                 paths=PathsConfig(cache_dir=args.cache_dir))
    tag = ""
    for item in args.set:
        key, sep, value = item.partition("=")
        section, _, field = key.partition(".")
        if not sep or section != "fidelity" or not hasattr(cfg.fidelity, field):
            raise SystemExit(f"--set expects fidelity.FIELD=VALUE with a FidelityConfig field, got {item!r}")
        kind = type(getattr(cfg.fidelity, field))
        setattr(cfg.fidelity, field, (value.lower() == "true") if kind is bool else kind(value))
        cfg.fidelity.__post_init__()  # validate the value
        tag += f"+{field}={value}"
    if args.batch_size:
        cfg.embedder.batch_size = args.batch_size
    if args.nlp_processes:
        cfg.atomizer.nlp_processes = args.nlp_processes
    if args.noun_chunks:
        cfg.atomizer.noun_chunks = True
    chunks, n_passages = load_chunks(dcfg, cfg.paths.resolved_data_dir(ROOT, dataset=dcfg), args.rechunk)

    from atomicrag.embed.factory import build_embedder

    embedder = build_embedder(cfg.embedder, cfg.fidelity)
    llm = None
    from atomicrag.core.needs import needs_llm

    if needs_llm(cfg, ("atomizer",)):  # from the atomizer's registry declaration
        from atomicrag.llm.factory import build_llm

        cfg.llm = conf_group("llm", args.llm, LLMConfig)
        llm = build_llm(cfg.llm, cfg.paths)
    t0 = time.perf_counter()
    try:
        graph = index_corpus(chunks, cfg, llm, embedder, cfg.paths.cache_dir, dcfg.name)
    finally:
        if llm is not None:
            llm.close()
    seconds = time.perf_counter() - t0
    st = graph_stats(graph)
    row = f"{dcfg.name} ({args.atomizer}{'+noun chunks' if cfg.atomizer.noun_chunks else ''}, " \
          f"{args.embedder}, {args.fidelity}{tag})"
    report = {"dataset": dcfg.name, "split": dcfg.split, "passages": n_passages, "chunks": len(chunks),
              "atomizer": args.atomizer, "embedder": embedder.name, "fidelity": args.fidelity + tag,
              "stats": st, "index_seconds": round(seconds, 2), "peak_rss_gb": round(peak_rss_gb(), 2),
              "graph_key": graph.meta.get("graph_key"), "timings": graph.meta.get("timings"),
              "failed_chunks": graph.meta.get("failed_chunks", 0),
              "provenance": prov.finish(cfg, data_files=DATA_FILES, uses_llm=llm is not None)}
    out = Path(args.out or ROOT / "results" / "graph_stats" / dcfg.name)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.atomizer}{'_nc' if cfg.atomizer.noun_chunks else ''}_{args.embedder}_{args.fidelity}"
    stem += tag.replace("+", "__").replace("=", "-")
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = stats_markdown({row: st})
    (out / f"{stem}.md").write_text(md)
    print(json.dumps({k: st[k] for k in TABLE6_COLUMNS}, indent=None))
    print(md)
    print(f"wrote {out / stem}.json/.md  ({len(chunks)} chunks, {seconds:.1f}s, peak {peak_rss_gb():.2f} GB)")


if __name__ == "__main__":
    main()
