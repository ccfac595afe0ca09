"""Latency of `atomicrag serve --index` (warm, over HTTP) against the CLI loading the index itself.

    python scripts/bench.py server                       # 2Wiki smoke corpus, default models, SmolLM2 answers
    python scripts/bench.py server --no-answers          # retrieval only (no vLLM server environment needed)
    python scripts/bench.py server --corpus my.jsonl --questions q.jsonl --out results/server/mine.json

Builds an index of ``--corpus`` (JSONL: ``id``, ``title``, ``text``) with the library defaults
(offline MiniLM, spaCy atoms, the default retriever), then measures, each as a median over its
repetitions:

- ``cli_cold_s``: ``atomicrag -q query Q --index I --no-answer --no-server`` (a new process that
  loads the index and the embedder);
- ``serve_ready_s``: ``atomicrag serve --index I`` from start until it answers ``/health``;
- ``http_search_ms``: ``POST /search`` on the warm server (retrieval only);
- ``http_answer_s``: ``POST /query`` with the reader (SmolLM2 on the CPU vLLM server; the LLM
  cache is off, so every answer is generated);
- ``cli_warm_s``: the same CLI command as ``cli_cold_s`` while the server runs (it asks the server).

Questions come from ``--questions`` (JSONL with ``question``), each asked once per phase, so no
reply is a cache hit. The record (command, commit, machine, load average, every sample) is written
atomically to ``--out``. A script, not a timed test: numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "atomicrag.library.cli", *args]


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "load_avg_1_5_15": list(os.getloadavg())}


def _commit() -> str:
    sys.path.insert(0, str(ROOT))
    from atomicrag.harness.provenance import git_state

    return git_state(ROOT)["commit"] or "unknown"


def _p50(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 4) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="passages JSONL (default: the 2Wiki smoke corpus, shipped with atomicrag)")
    ap.add_argument("--questions", help="questions JSONL (default: the 2Wiki smoke questions)")
    ap.add_argument("--searches", type=int, default=40, help="HTTP /search requests (questions cycle)")
    ap.add_argument("--answers", type=int, default=10, help="HTTP /query requests with the reader")
    ap.add_argument("--cli-runs", type=int, default=3)
    ap.add_argument("--no-answers", action="store_true", help="retrieval only: no LLM needed")
    ap.add_argument("--set", action="append", default=[], help="index-time config override (repeatable)")
    ap.add_argument("--out", default=str(ROOT / "results" / "server" / "bench_server.json"))
    args = ap.parse_args()
    if args.corpus is None or args.questions is None:
        sys.path.insert(0, str(ROOT))
        from atomicrag.data.loaders import split_files

        qfile, cfile = split_files("2wikimultihopqa", "smoke")
        args.corpus, args.questions = args.corpus or str(cfile), args.questions or str(qfile)

    questions = [json.loads(ln)["question"] for ln in Path(args.questions).read_text().splitlines() if ln.strip()]
    work = Path(tempfile.mkdtemp(prefix="atomicrag-bench-server-"))
    env = {**os.environ, "ATOMICRAG_STATE_DIR": str(work / "state"), "ATOMICRAG_NO_PROGRESS": "1"}
    index = work / "index"
    sets = [x for s in args.set for x in ("--set", s)]
    if args.no_answers:
        sets += ["--set", "reader.name=none"]
    t0 = time.perf_counter()
    _timed(_cli("-q", "index", args.corpus, "--out", str(index), *sets), env)
    index_s = time.perf_counter() - t0
    print(f"indexed {args.corpus} in {index_s:.1f} s", flush=True)

    q0 = questions[0]
    cold = [_timed(_cli("-q", "query", q0, "--index", str(index), "--no-answer", "--no-server"), env)
            for _ in range(args.cli_runs)]
    print(f"CLI cold (loads the index): {cold}", flush=True)

    t0 = time.perf_counter()
    # no LLM cache: every answer is generated, not read back
    server_log = work / "serve.log"
    with open(server_log, "w") as fh:  # a file, not a pipe: nobody reads a pipe while we measure
        server = subprocess.Popen(_cli("-q", "serve", "--index", str(index), "--port", "0", "--set",
                                       "llm.cache=false"), env=env, stdout=fh, stderr=subprocess.STDOUT)
    sys.path.insert(0, str(ROOT))
    os.environ["ATOMICRAG_STATE_DIR"] = env["ATOMICRAG_STATE_DIR"]
    from atomicrag.library.http_server import find_index_server

    url = None
    while url is None:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited:\n{server_log.read_text()[-3000:]}")
        if time.perf_counter() - t0 > 1200:
            raise RuntimeError("the server did not come up in 20 minutes")
        time.sleep(0.5)
        url = find_index_server(index)
    ready_s = time.perf_counter() - t0
    print(f"server ready at {url} in {ready_s:.1f} s", flush=True)
    try:
        with httpx.Client(timeout=900) as client:
            search_ms = []
            for i in range(args.searches):
                t = time.perf_counter()
                r = client.post(f"{url}/search", json={"question": questions[i % len(questions)]})
                search_ms.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
            print(f"HTTP /search p50 {_p50(search_ms)} ms", flush=True)
            answer_s, answers = [], []
            for i in range(0 if args.no_answers else args.answers):
                t = time.perf_counter()
                r = client.post(f"{url}/query", json={"question": questions[i % len(questions)], "answer": True})
                answer_s.append(time.perf_counter() - t)
                r.raise_for_status()
                res = r.json()["results"][0]
                answers.append({"question": res["query"], "answer": res["answer"], "errors": res["errors"]})
            if answer_s:
                print(f"HTTP /query (answer) p50 {_p50(answer_s)} s", flush=True)
        warm = [_timed(_cli("-q", "query", q0, "--index", str(index), "--no-answer"), env)
                for _ in range(args.cli_runs)]
        print(f"CLI warm (asks the server): {warm}", flush=True)
    finally:
        server.terminate()
        server.wait(60)

    record = {
        "command": shlex.join([sys.executable, *sys.argv]), "commit": _commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": _machine(),
        "corpus": args.corpus, "questions": len(questions), "index_s": round(index_s, 2),
        "p50": {"cli_cold_s": _p50(cold), "serve_ready_s": round(ready_s, 2), "http_search_ms": _p50(search_ms),
                "http_answer_s": _p50(answer_s), "cli_warm_s": _p50(warm)},
        "samples": {"cli_cold_s": cold, "http_search_ms": search_ms, "http_answer_s": answer_s, "cli_warm_s": warm},
        "answers": answers,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(out)  # atomic: a reader never sees half a record
    print(json.dumps(record["p50"], indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
