"""Write conf/experiment/**.yaml: one Hydra experiment file per paper-table row / sweep point.

The YAML files are the committed source of truth (edit them by hand if you like); this script
only saves typing them and keeps them uniform. Every file lists its *full* set of group choices
(Hydra cannot inherit one experiment from another), so a file read on its own says exactly what
runs.

    python experiments/generate_configs.py           # (re)write the files
    python experiments/generate_configs.py --check   # exit 1 if a committed file differs
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "conf" / "experiment"

# paper default (Table 5): gpt-4o-mini generator and judge, bge-large, LLM atomizer, PPR, AQD, AS
PAPER = {
    "dataset": "medical_dev", "llm": "openai_gpt4o_mini", "embedder": "bge_large", "atomizer": "llm",
    "graph": "default", "fidelity": "paper", "retriever": "ppr", "decompose": "llm", "sieve": "llm",
    "reader": "dataset", "judge": "llm",
}
PAPER_FIELDS = {"retriever.query_entities": "llm"}  # paper: LLM NER on the query
# CPU smoke default: everything offline, no judge (EM/F1/recall only)
SMOKE = {  # ppr_minilm: the paper's seeding thresholds assume bge-large (conf/retriever/ppr_minilm.yaml)
    "dataset": "2wiki_smoke", "llm": "smollm2", "embedder": "minilm", "atomizer": "sentence",
    "graph": "default", "fidelity": "paper", "retriever": "ppr_minilm", "decompose": "llm", "sieve": "llm",
    "reader": "dataset", "judge": "none",
}
# vanilla RAG: dense passage retrieval over the chunks, no atoms, no AQD/AS
VANILLA = {"retriever": "dense_passage", "atomizer": "chunk", "decompose": "none", "sieve": "none"}
RERANK = {"retriever.reranker": "BAAI/bge-reranker-large", "retriever.rerank_candidates": 25}

DATASETS = {  # short name -> conf/dataset file
    "medical": "medical_dev", "novel": "novel_dev", "hotpotqa": "hotpotqa", "2wiki": "2wiki_dev",
    "musique": "musique_dev",
}
DATASET_TITLES = {
    "medical": "Graph-Bench Medical", "novel": "Graph-Bench Novel", "hotpotqa": "HotpotQA",
    "2wiki": "2WikiMultiHopQA", "musique": "MuSiQue",
}
# Table 2 rows: (file stem, paper row label, group overrides)
ABLATIONS = [
    ("full", "AtomicRAG", {}),
    ("wo_ergr", "w/o ERGR", {"retriever": "dense"}),
    ("wo_aqd", "w/o AQD", {"decompose": "none"}),
    ("wo_as", "w/o AS", {"sieve": "none"}),
    ("wo_ka", "w/o KA", {"atomizer": "chunk"}),
    ("wo_ergr_aqd", "w/o {ERGR, AQD}", {"retriever": "dense", "decompose": "none"}),
    ("wo_ergr_aqd_as", "w/o {ERGR, AQD, AS}", {"retriever": "dense", "decompose": "none", "sieve": "none"}),
    ("wo_all", "w/o {ERGR, AQD, AS, KA}",
     {"retriever": "dense", "decompose": "none", "sieve": "none", "atomizer": "chunk"}),
]
EMBEDDERS = [  # conf/embedder file, Table 8 row
    ("bge_large", "bge-large-en-v1.5"), ("gte_qwen2_1.5b", "gte-qwen2 (1.5B)"), ("gte_large", "gte-large"),
    ("nomic_embed", "nomic-embed"), ("bge_m3", "bge-m3"), ("e5_large", "e5-large"),
]
BACKBONES = [  # file stem, conf/llm file, Table 10 row
    ("gpt4o_mini", "openai_gpt4o_mini", "GPT-4o-mini"), ("deepseek_v3", "deepseek_v3", "DeepSeek-V3"),
    ("qwen14b", "vllm_qwen14b", "Qwen2.5-14B-Instruct"), ("qwen7b", "vllm_qwen7b", "Qwen2.5-7B-Instruct"),
    ("llama8b", "vllm_llama8b", "Llama-3.1-8B-Instruct"),
]
RETRIEVERS = [
    ("ppr", "PPR (Baseline)"), ("rwr", "RWR"), ("power", "Power Iteration"), ("katz", "Katz Index"),
    ("labelprop", "Label Propagation"), ("bfs", "Weighted BFS"),
]
DAMPINGS = ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
SEED_WEIGHTS = ["0.01", "0.05", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
TOP_KS = [1, 5, 10, 15, 20, 25]
CONTEXT_ATOMS = [2, 4, 8, 16, 32, 64]  # Fig. 5 budgets, in atoms (see experiments/fig5/README.md)


def _stem(value: str) -> str:
    return value.replace(".", "_")


def render(comment: list[str], groups: dict[str, str], experiment: str, fields: dict[str, object]) -> str:
    lines = ["# @package _global_"] + [f"# {c}" if c else "#" for c in comment]
    lines.append("defaults:")
    lines += [f"  - override /{g}: {v}" for g, v in groups.items()]
    lines.append("")
    lines.append(f"experiment_name: {experiment}")
    lines.append("baselines: []")
    nested: dict[str, dict[str, object]] = {}
    for key, value in fields.items():
        section, _, attr = key.partition(".")
        nested.setdefault(section, {})[attr] = value
    for section, items in nested.items():
        lines.append(f"{section}:")
        for attr, value in items.items():
            lines.append(f"  {attr}: {_yaml(value)}")
    return "\n".join(lines) + "\n"


def _yaml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and not re.fullmatch(r"[A-Za-z][\w./-]*", value):
        return json.dumps(value)
    return str(value)


def paper(dataset: str = "medical", **groups: str) -> dict[str, str]:
    return {**PAPER, "dataset": DATASETS[dataset], **groups}


def build() -> dict[str, str]:
    files: dict[str, str] = {}

    def add(path: str, comment: list[str], groups: dict[str, str], experiment: str,
            fields: dict[str, object] | None = None, paper_fields: bool = True) -> None:
        graph_retriever = groups["retriever"] not in ("dense", "dense_passage")
        merged = dict(PAPER_FIELDS) if paper_fields and graph_retriever else {}
        merged.update(fields or {})
        files[path] = render(comment, groups, experiment, merged)

    for ds, title in DATASET_TITLES.items():
        add(f"table1/{ds}_atomicrag.yaml", [f"Table 1, row 'Ours' (AtomicRAG) on {title}."], paper(ds), "table1")
        add(f"table1/{ds}_rag.yaml", [f"Table 1, row 'RAG (w/o rerank)' on {title}: dense passage retrieval."],
            paper(ds, **VANILLA), "table1")
        add(f"table1/{ds}_rag_rerank.yaml",
            [f"Table 1, row 'RAG (w rerank)' on {title}: dense passage retrieval + cross-encoder rerank.",
             "The paper does not name its reranker; bge-reranker-large is our choice."],
            paper(ds, **VANILLA), "table1", RERANK)
    for ds in ("hotpotqa", "medical", "novel"):
        for stem, label, groups in ABLATIONS:
            add(f"table2/{ds}_{stem}.yaml", [f"Table 2, row '{label}' on {DATASET_TITLES[ds]}."],
                paper(ds, **groups), "table2")
    add("table4/atomicrag.yaml", ["Tables 4 and 7, row 'Ours': tokens per module and latency on Graph-Bench",
                                  "Medical (the Table 7 dataset is not stated; we use Medical)."],
        paper(), "table4")
    add("table4/rag_rerank.yaml", ["Table 4, row 'Vanilla RAG' (its ACC 62.4 is Table 1's RAG (w rerank))."],
        paper(**VANILLA), "table4", RERANK)
    for ds, title in DATASET_TITLES.items():
        add(f"table6/{ds}.yaml",
            [f"Tables 3 and 6: Atom-Entity Graph statistics on {title}.",
             "Index + retrieval only (no decomposition, sieve, reader or judge): graph_stats is what counts."],
            paper(ds, decompose="none", sieve="none", reader="none", judge="none"), "table6")
    for emb, label in EMBEDDERS:
        add(f"table8/{_stem(emb)}.yaml", [f"Table 8, row '{label}' on Graph-Bench Medical."],
            paper(embedder=emb), "table8")
    add("table9/atomicrag.yaml", ["Table 9, row 'Ours': Qwen2.5-14B-Instruct generator on Graph-Bench Medical",
                                  "(the same configuration as table10/qwen14b)."],
        paper(llm="vllm_qwen14b"), "table9")
    add("table9/rag_rerank.yaml", ["Table 9, row 'RAG (w/ rerank)' with the Qwen2.5-14B-Instruct generator."],
        paper(llm="vllm_qwen14b", **VANILLA), "table9", RERANK)
    for stem, llm, label in BACKBONES:
        add(f"table10/{stem}.yaml", [f"Table 10, row '{label}' on Graph-Bench Medical.",
                                     "The judge is the run's LLM (JudgeConfig has no judge-model field)."],
            paper(llm=llm), "table10")
    for ret, label in RETRIEVERS:
        add(f"table11/{ret}.yaml", [f"Table 11, row '{label}' on Graph-Bench Medical."],
            paper(retriever=ret), "table11")
    for d in DAMPINGS:
        add(f"table12/damping_{_stem(d)}.yaml",
            [f"Table 12, rho = {d} on Graph-Bench Medical (meaning set by fidelity.damping_semantics)."],
            paper(), "table12", {"retriever.damping": float(d)})
    for w in SEED_WEIGHTS:
        add(f"table13/seed_{_stem(w)}.yaml", [f"Table 13, lambda_seed (atom seed weight) = {w} on Graph-Bench Medical."],
            paper(), "table13", {"retriever.atom_seed_weight": float(w)})
    for k in TOP_KS:
        add(f"fig4/topk_{k}.yaml",
            [f"Figure 4, top-k = {k} atoms per query on Graph-Bench Medical.",
             "The merged context is capped at k atoms too (the released code uses one K for both)."],
            paper(), "fig4", {"retriever.top_k": k, "sieve.max_context": k})
    for n in CONTEXT_ATOMS:
        add(f"fig5/ctx_{n}.yaml",
            [f"Figure 5, context budget of {n} atoms on Graph-Bench Medical.",
             "The paper budgets tokens; the config caps atoms (sieve.max_context). make_tables plots the",
             "measured answer-prompt tokens per query on the x axis."],
            paper(), "fig5", {"sieve.max_context": n})
    for stem, label, groups in ABLATIONS:
        add(f"smoke/table2_{stem}.yaml",
            [f"CPU smoke of Table 2, row '{label}': 2Wiki smoke set, SmolLM2-135M (llama.cpp), MiniLM,",
             "sentence atomizer (the 'full' row; w/o KA = chunk atomizer), no judge: EM/F1/recall only."],
            {**SMOKE, **groups}, "table2_smoke", paper_fields=False)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report files that differ; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in sorted(build().items()):
        path = OUT / rel
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(rel)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    verb = "differ" if args.check else "written"
    print(f"{len(stale)} experiment file(s) {verb}" + (": " + ", ".join(stale) if stale and args.check else ""))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
