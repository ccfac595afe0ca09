"""What the index server adds to a retrieval: ``POST /search`` over a keep-alive connection against
the same ``rag.search`` called directly, in one process, interleaved (so machine load hits both).

    python scripts/bench.py server_overhead                   # 300 of each
    python scripts/bench.py server_overhead --n 100 --out results/server/overhead_mine.json

Indexes the 2Wiki smoke corpus that ships with atomicrag with the fake embedder and no reader, so
the retrieval is short and the server's own cost (HTTP parsing, the Host/Origin/token/JSON checks,
the JSON reply) is a visible part of it; the record gives both medians, their difference (the
server's cost per request) and their ratio, with command, commit and load averages.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from atomicrag.harness.provenance import git_state  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="requests of each kind")
    ap.add_argument("--out", default=str(ROOT / "results" / "server" / "overhead.json"))
    ap.add_argument("--note", default="", help="said in the record (e.g. which server code ran)")
    args = ap.parse_args()

    import httpx
    from smoke_server import served_smoke_index, smoke_corpus

    from atomicrag.library import http_server

    cfile, docs, questions = smoke_corpus()
    load_start = list(os.getloadavg())
    direct_ms: list[float] = []
    http_ms: list[float] = []
    with served_smoke_index(docs, "atomicrag-bench-overhead-") as (rag, httpd):
        with httpx.Client() as client:
            def direct(q: str) -> float:
                t0 = time.perf_counter()
                rag.search(q)
                return (time.perf_counter() - t0) * 1000

            def over_http(q: str) -> float:
                t0 = time.perf_counter()
                resp = client.post(f"{httpd.url}/search", json={"question": q})
                took = (time.perf_counter() - t0) * 1000
                if resp.status_code != 200:
                    raise RuntimeError(f"/search answered {resp.status_code}: {resp.text[:300]}")
                return took

            for i in range(args.n + 10):  # the first 10 of each warm up and are not kept
                q = questions[i % len(questions)]
                # each question both ways, in alternating order: a cache or drift favours neither
                if i % 2:
                    h, d = over_http(q), direct(q)
                else:
                    d, h = direct(q), over_http(q)
                if i >= 10:
                    direct_ms.append(d)
                    http_ms.append(h)
    d50, h50 = statistics.median(direct_ms), statistics.median(http_ms)
    record = {
        "command": shlex.join([sys.executable, *sys.argv]), "commit": git_state(ROOT)["commit"] or "unknown", "note": args.note,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1_5_15_at_start": load_start, "load_avg_1_5_15_at_end": list(os.getloadavg())},
        "corpus": str(cfile), "documents": len(docs), "n": args.n, "module": http_server.__file__,
        "p50_ms": {"direct_search": round(d50, 3), "http_search": round(h50, 3),
                   "server_cost": round(h50 - d50, 3)},
        "ratio_http_to_direct": round(h50 / d50, 3),
        "samples_ms": {"direct_search": [round(x, 3) for x in direct_ms], "http_search": [round(x, 3) for x in http_ms]},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(out)  # atomic: a reader never sees half a record
    print(json.dumps({**record["p50_ms"], "ratio": record["ratio_http_to_direct"]}))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
