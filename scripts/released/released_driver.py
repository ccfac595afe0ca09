"""Run the AUTHORS' released AtomicRAG code on a slice and dump what each stage produced, as JSON.

Runs in the released code's own environment (``.venv-released``, built by
scripts/setup_released_env.sh), never in the project's: the project does not import the released
code. ``scripts/parity_released.py`` starts this driver as a subprocess; by hand:

    .venv-released/bin/python scripts/released/released_driver.py --checkout ../shared/released_code/AtomicRAG \
        --docs docs.json --questions questions.json --llm-base-url http://127.0.0.1:PORT/c/released/v1 \
        --model qwen2.5-coder-0.5b-instruct --embed-model /path/to/all-MiniLM-L6-v2 \
        --work-dir /tmp/released_ws --out released.json [--qa-template precise]

What is set as the released runner (scripts/run_atomicrag.py) sets it: retrieval_top_k=qa_top_k=25,
passage_node_weight=0.1, damping=0.3, embedding_batch_size=128, max_new_tokens=None,
max_retry_attempts=5, a fresh workspace, the documents given verbatim (the caller prepends the
runner's ``"{idx}:"``). Changed for a CPU machine with local models, and nothing else:

- the LLM: its OpenAI-compatible class at ``--llm-base-url`` (the recording proxy), key "dummy";
- the embedding model: the released code picks its class by name and has no class for a
  sentence-transformers folder, so the driver hands the local folder to the released
  ``BGEEmbeddingModel`` (AutoModel + mean pooling + L2 norm: what MiniLM was trained for);
  ``embedding_model_dtype=float32`` (there is no fp16 matmul worth having on CPU);
- ``max_concurrency`` (``--concurrency``): the runner's 200 would only queue on a 2-core server;
- ``--time-scale S`` (default 1: as released): every ``asyncio.wait_for`` timeout of the released
  pipeline module and its fragment filter is multiplied by S. Those are the 60 s per-task limits of
  its sieve, its reader and its query NER, scaled alike, so that a parity run can drive a sieve reply
  past the limit in seconds, not minutes (our row runs with ``sieve.timeout_s`` = 60 S).

Stage outputs are read from the released objects after each stage: the OpenIE results file
(NER entities, triples, fragments and their entities), the igraph graph (nodes and edges by
endpoint type), the PPR ranking of every query (wrapped ``graph_search_with_fact_entities``), the
sieve's kept indices (wrapped ``filter_fragments_batch_async``), answers, raw replies and the token
statistics.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


class ScaledTimeouts:
    """Stands for the ``asyncio`` module inside a released module: ``wait_for`` with its timeout
    multiplied by ``scale``, everything else asyncio's own."""

    def __init__(self, scale: float) -> None:
        if scale <= 0:
            raise SystemExit(f"released_driver: --time-scale must be > 0, got {scale}")
        self.scale = scale

    def wait_for(self, aw: Any, timeout: float | None) -> Any:
        return asyncio.wait_for(aw, None if timeout is None else timeout * self.scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", required=True)
    ap.add_argument("--docs", required=True, help="JSON list of document strings, indexed verbatim")
    ap.add_argument("--questions", required=True, help="JSON list of {id, question}")
    ap.add_argument("--llm-base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--embed-model", required=True, help="local folder of a mean-pooled encoder")
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qa-template", default=None, help="precise | abstract (the runner's --qa_prompt_template)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=25)
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="multiply the released per-task asyncio.wait_for timeouts (60 s) by this")
    args = ap.parse_args()

    checkout = Path(args.checkout).resolve()
    if not (checkout / "atomicrag" / "atomicrag.py").is_file():
        print(f"released_driver: {checkout} is not a checkout of the released AtomicRAG code "
              "(no atomicrag/atomicrag.py)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(checkout))
    os.environ.setdefault("OPENAI_API_KEY", "dummy")  # a local server; the released class insists on one
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import atomicrag.atomicrag as released
    from atomicrag.embedding_model.BGE import BGEEmbeddingModel
    from atomicrag.utils.config_utils import BaseConfig

    released._get_embedding_model_class = lambda embedding_model_name=None: BGEEmbeddingModel
    if args.time_scale != 1.0:
        import atomicrag.fragment_filter as released_filter

        scaled = ScaledTimeouts(args.time_scale)
        released.asyncio = scaled  # the reader's and query NER's wait_for
        released_filter.asyncio = scaled  # the sieve's

    docs: list[str] = json.loads(Path(args.docs).read_text(encoding="utf-8"))
    questions: list[dict[str, Any]] = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)

    cfg = BaseConfig(
        save_dir=str(work / "corpus"), llm_base_url=args.llm_base_url, llm_name=args.model,
        embedding_model_name=str(Path(args.embed_model).resolve()),
        force_index_from_scratch=True, force_openie_from_scratch=True,
        retrieval_top_k=args.top_k, qa_top_k=args.top_k, passage_node_weight=0.1, damping=0.3,
        embedding_batch_size=128, max_new_tokens=None, max_retry_attempts=5,
    )
    cfg.max_concurrency = args.concurrency
    cfg.embedding_model_dtype = "float32"
    if args.qa_template:
        cfg.qa_prompt_template = args.qa_template

    rag = released.AtomicRAG(global_config=cfg)

    ppr: list[dict[str, Any]] = []
    orig_search = rag.graph_search_with_fact_entities

    def search(query: str, passage_node_weight: float = 0.1) -> Any:
        ids, scores = orig_search(query, passage_node_weight=passage_node_weight)
        seeds[-1]["query"] = query  # run_ppr was called by this search (under the graph lock)
        top = [rag.hierarchical_fragment_store.get_row(rag.fragment_node_keys[i])["content"]
               for i in list(ids)[: args.top_k]]
        ppr.append({"query": query, "top": top, "scores": [float(s) for s in list(scores)[: args.top_k]]})
        return ids, scores

    rag.graph_search_with_fact_entities = search

    seeds: list[dict[str, Any]] = []  # per PPR call: node content -> reset weight (before normalising)
    orig_run_ppr = rag.run_ppr

    def run_ppr(reset_prob: Any, damping: float = 0.3) -> Any:
        contents = rag.graph.vs["content"]
        seeds.append({"weights": {contents[i]: float(w) for i, w in enumerate(reset_prob) if w > 0}})
        return orig_run_ppr(reset_prob, damping=damping)

    rag.run_ppr = run_ppr

    sieve: list[dict[str, Any]] = []
    orig_filter = rag.fragment_filter.filter_fragments_batch_async

    async def filter_batch(requests: Any) -> Any:
        out = await orig_filter(requests=requests)
        for r in requests:
            kept_docs, kept_idx = out.get(r.request_id, (r.fragments, list(range(len(r.fragments)))))
            sieve.append({"query": r.question, "candidates": list(r.fragments), "kept": list(kept_docs),
                          "kept_indices": [int(i) for i in kept_idx]})
        return out

    rag.fragment_filter.filter_fragments_batch_async = filter_batch

    t0 = time.perf_counter()
    rag.index(docs)
    t_index = time.perf_counter() - t0
    openie = json.loads(Path(rag.openie_results_path).read_text(encoding="utf-8"))
    by_idx = {row["idx"]: row for row in openie.get("docs", [])}
    from atomicrag.utils.misc_utils import compute_mdhash_id

    chunks = []
    for i, doc in enumerate(docs):
        row = by_idx.get(compute_mdhash_id(doc, "doc-"), {})
        chunks.append({"position": i, "entities": row.get("extracted_entities", []),
                       "triples": row.get("extracted_triples", []),
                       "fragments": row.get("extracted_knowledge_fragments", []),
                       "fragment_entities": row.get("extracted_fragment_entities", [])})

    g = rag.graph
    names = g.vs["name"] if g.vcount() else []
    contents = g.vs["content"] if g.vcount() else []

    def kind(name: str) -> str:
        return name.split("-", 1)[0]

    nodes = [{"type": kind(n), "text": c} for n, c in zip(names, contents)]
    edges = []
    for e in g.es:
        a, b = e.tuple
        edges.append({"types": f"{kind(names[a])}-{kind(names[b])}", "a": contents[a], "b": contents[b],
                      "weight": float(e["weight"]) if "weight" in e.attributes() else 1.0})

    t1 = time.perf_counter()
    solutions, raw_replies, _meta = asyncio.run(rag.rag_qa_async(queries=[q["question"] for q in questions]))
    t_query = time.perf_counter() - t1
    answers = []
    for q, sol, raw in zip(questions, solutions, raw_replies):
        answers.append({"id": q["id"], "question": q["question"], "answer": sol.answer, "raw": raw,
                        "docs": list(sol.docs or []),
                        "decomposition": getattr(sol, "decomposition_metadata", None)})
    result = {
        "driver": "released", "checkout": str(checkout), "n_docs": len(docs),
        "chunks": chunks, "nodes": nodes, "edges": edges, "seeds": seeds, "ppr": ppr, "sieve": sieve,
        "answers": answers,
        "statistics": rag.get_statistics(), "seconds": {"index": round(t_index, 2), "query": round(t_query, 2)},
    }
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    tmp.replace(args.out)  # atomic: a crash never leaves a half-written result
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
