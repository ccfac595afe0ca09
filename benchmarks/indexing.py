#!/usr/bin/env python
"""Indexing benchmark: the full 2Wiki corpus (6,119 passages) with atomizer=sentence and the
offline MiniLM embedder, from an empty cache. Prints the stage split, peak memory, end-to-end
time and the Table 6 statistics. Target on 2 idle cores with AVX512-BF16: < 150 s, < 4 GB.

Before indexing, the same process encodes a sample of the corpus's sentences with MiniLM in
fp32, bf16 (torch) and ONNX Runtime (fp32) and prints tokens/s, the ratios and the minimum
cosine to fp32, so the precision choice is measured on the machine at hand (``--probe 0``
skips it). ``--embedder auto`` (default) indexes with torch MiniLM where bf16 is native
(``embedder.precision=auto`` then picks bf16) and with ONNX Runtime elsewhere.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench.py indexing
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench.py indexing --embedder minilm --precision fp32
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from graph_stats import passages_as_chunks, peak_rss_gb, script_config

from atomicrag.core.hardware import cpu_has_native_bf16
from atomicrag.data.loaders import read_passages_jsonl, split_files
from atomicrag.engine import ConfigModels, Engine
from atomicrag.graph.stats import graph_stats, stats_markdown


def probe_precisions(chunks: list, n: int) -> None:
    """Encode ``n`` corpus sentences with MiniLM in fp32, bf16 (torch) and ONNX (fp32), same process."""
    from atomicrag.embed.encoders import TransformersEmbedder

    texts = [t.strip() for c in chunks for t in c.text.split(". ") if len(t.strip()) > 15][:n]
    fp32 = TransformersEmbedder("minilm", device="cpu", precision="fp32", batch_size=64)
    tokens = sum(len(ids) for ids in fp32.tokenizer(texts, truncation=True, max_length=fp32.max_length)["input_ids"])
    encoders = {"torch fp32": fp32, "torch bf16": TransformersEmbedder("minilm", device="cpu", precision="bf16",
                                                                      batch_size=64)}
    try:
        from atomicrag.embed.onnx_encoder import OnnxEmbedder

        encoders["onnx fp32"] = OnnxEmbedder("minilm", batch_size=32)
    except ImportError as exc:
        print(f"probe: no ONNX Runtime ({exc})")
    out, rate = {}, {}
    for name, enc in encoders.items():
        enc.encode(texts[:64])  # warm-up (oneDNN kernels, ORT session)
        t0, c0 = time.perf_counter(), time.process_time()
        out[name] = enc.encode(texts)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rate[name] = tokens / wall
        cos = float((out[name] * out["torch fp32"]).sum(1).min())
        print(f"probe {name:<11s} {rate[name]:8,.0f} tokens/s wall ({tokens / cpu:8,.0f} per CPU-s), "
              f"min cosine to fp32 {cos:.5f}  ({len(texts)} sentences, {tokens:,} tokens)", flush=True)
    onnx = rate.get("onnx fp32", float("nan"))
    print(f"probe: bf16/fp32 = {rate['torch bf16'] / rate['torch fp32']:.2f}x, bf16/onnx = "
          f"{rate['torch bf16'] / onnx:.2f}x, onnx/fp32 = {onnx / rate['torch fp32']:.2f}x "
          f"(native bf16: {cpu_has_native_bf16()}; load average {os.getloadavg()[0]:.1f})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="passages JSONL (default: the 2Wiki DEV corpus where paths.data_dir=auto finds it)")
    ap.add_argument("--atomizer", default="sentence", choices=["sentence", "chunk", "vocabulary"])
    ap.add_argument("--embedder", default="auto",
                    help="conf/embedder/<name>.yaml (minilm: sentence-transformers); auto: minilm where bf16 is "
                         "native, else minilm_onnx")
    ap.add_argument("--precision", default=None, choices=["auto", "fp32", "bf16", "fp16"],
                    help="embedder.precision override (torch embedders)")
    ap.add_argument("--probe", type=int, default=2000, help="sentences for the fp32/bf16/ONNX probe (0 = skip)")
    ap.add_argument("--batch-size", type=int, default=None, help="embedder batch size override")
    ap.add_argument("--fidelity", default="paper")
    ap.add_argument("--limit", type=int, default=None, help="first N passages only")
    ap.add_argument("--noun-chunks", action="store_true")
    ap.add_argument("--nlp-processes", type=int, default=0, help="spaCy worker processes (0 = auto)")
    ap.add_argument("--json", default=None, help="write the report here")
    args = ap.parse_args()
    args.corpus = args.corpus or str(split_files("2wikimultihopqa", "dev")[1])
    from atomicrag.harness.provenance import Provenance

    prov = Provenance.start()

    t_start, c_start = time.perf_counter(), time.process_time()
    passages = read_passages_jsonl(Path(args.corpus))[: args.limit]
    chunks = passages_as_chunks(passages)  # 2Wiki passages are short: one chunk each
    t_load = time.perf_counter() - t_start

    if args.embedder == "auto":
        args.embedder = "minilm" if cpu_has_native_bf16() else "minilm_onnx"
    if args.probe:
        probe_precisions(chunks, args.probe)
    overrides = [f"atomizer.noun_chunks={str(args.noun_chunks).lower()}",
                 f"atomizer.nlp_processes={args.nlp_processes}", "atomizer.vocab_llm_filter=false"]
    if args.batch_size:
        overrides.append(f"embedder.batch_size={args.batch_size}")
    if args.precision:
        overrides.append(f"embedder.precision={args.precision}")
    cfg = script_config({"atomizer": args.atomizer, "embedder": args.embedder, "fidelity": args.fidelity},
                        overrides)
    models = ConfigModels(cfg)
    t, c = time.perf_counter(), time.process_time()
    embedder = models.embedder
    t_model, c_model = time.perf_counter() - t, time.process_time() - c

    with tempfile.TemporaryDirectory(prefix="bench_index_") as cache:  # measure from an empty cache
        t, c = time.perf_counter(), time.process_time()
        graph = Engine(cfg, models, cache_dir=cache, dataset_name="bench").index_chunks(chunks).graph
        t_index, c_index = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        st = graph_stats(graph)
        t_stats, c_stats = time.perf_counter() - t, time.process_time() - c
    total, cpu_total = time.perf_counter() - t_start, time.process_time() - c_start
    a_stats = graph.meta.get("atomize_stats", {})
    tm = graph.meta.get("timings", {})

    def pair(name: str) -> list[float | None]:
        return [tm.get(f"{name}_s"), tm.get(f"{name}_cpu_s")]

    # [wall seconds, process CPU seconds]: on a shared machine CPU time is the stable number
    stages = {
        "load_corpus": [round(t_load, 2), None],
        "load_embedder": [round(t_model, 2), round(c_model, 2)],
        "ner_atomize": [a_stats.get("nlp_s", a_stats.get("atomize_s")), a_stats.get("nlp_cpu_s")],
        "embed_atoms": pair("embed_atoms"),
        "embed_entities": pair("embed_entities"),
        "graph_structure+adjacency": [round(tm.get("structure_s", 0) + tm.get("adjacency_s", 0), 3),
                                      round(tm.get("structure_cpu_s", 0) + tm.get("adjacency_cpu_s", 0), 3)],
        "synonym_knn": pair("synonym_knn"),
        "index_total (incl. cache writes)": [round(t_index, 2), round(c_index, 2)],
        "graph_stats": [round(t_stats, 2), round(c_stats, 2)],
    }
    load = os.getloadavg()
    report = {"corpus": args.corpus, "passages": len(passages), "chunks": len(chunks), "atomizer": args.atomizer,
              "embedder": embedder.name, "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
              "load_average_1_5_15": [round(x, 1) for x in load], "stages_wall_cpu_s": stages,
              "end_to_end_s": round(total, 2), "end_to_end_cpu_s": round(cpu_total, 2),
              "peak_rss_gb": round(peak_rss_gb(), 2), "stats": st}
    print(json.dumps(report, indent=2))
    print(stats_markdown({f"2Wiki ({args.atomizer}, {args.embedder})": st}))
    verdict = "OK" if total < 150 and peak_rss_gb() < 4 else "OVER TARGET"
    print(f"end-to-end {total:.1f}s wall, {cpu_total:.1f}s CPU (load average {load[0]:.1f} on {os.cpu_count()} cores, "
          f"native bf16: {cpu_has_native_bf16()}), embedder {embedder.name}, peak {peak_rss_gb():.2f} GB -> {verdict} "
          f"(target < 150 s, < 4 GB on 2 idle cores)")
    if args.json:
        report["provenance"] = prov.finish(cfg, data_files=[args.corpus], uses_llm=False)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
