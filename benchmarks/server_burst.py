"""Bursts of clients and idle connections against `atomicrag serve --index` (issue 49's goal: 100
concurrent clients get answers or a 503, never a reset; idle connections do not pin threads).

    python scripts/bench.py server_burst                     # 50, 100, 200 clients; 200 idle connections
    python scripts/bench.py server_burst --clients 100 --idle 0 --out results/server/burst_mine.json

Indexes the 2Wiki smoke corpus that ships with atomicrag with the fake embedder and no reader
(what is measured is the server, not the models), serves it in this process with the default
limits (``make_server``), then for each ``--clients`` N starts one child process that opens N
connections at once (asyncio) and sends each a ``POST /search``: the record counts each outcome
(``200``, ``503``, or the error a client got: ``ConnectionResetError``, ``TimeoutError`` after
``--client-timeout`` s, ...) and the burst's wall time. Then it opens ``--idle`` connections that
send nothing and records the server process's threads at once and after the idle timeout. The
record (command, commit, machine, load average, the settings) is written atomically to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from atomicrag.harness.provenance import git_state  # noqa: E402

CLIENT = """
import asyncio, collections, json, sys

async def one(port, request, timeout):
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(request)
        await w.drain()
        data = await asyncio.wait_for(r.read(), timeout)
        w.close()
        return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "no reply"
    except Exception as exc:
        return type(exc).__name__

async def main(port, n, timeout, question):
    body = json.dumps({"question": question}).encode()
    request = (b"POST /search HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\n"
               b"Connection: close\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
    print(json.dumps(collections.Counter(await asyncio.gather(*[one(port, request, timeout) for _ in range(n)]))))

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[50, 100, 200], help="burst sizes")
    ap.add_argument("--idle", type=int, default=200, help="silent connections to open (0: skip)")
    ap.add_argument("--client-timeout", type=float, default=20.0, help="seconds a client waits for its reply")
    ap.add_argument("--out", default=str(ROOT / "results" / "server" / "burst.json"))
    ap.add_argument("--note", default="", help="said in the record (e.g. which server code ran)")
    args = ap.parse_args()

    from smoke_server import served_smoke_index, smoke_corpus

    from atomicrag.library import http_server

    cfile, docs, questions = smoke_corpus()
    question = questions[0]
    record: dict[str, Any] = {
        "command": shlex.join([sys.executable, *sys.argv]), "commit": git_state(ROOT)["commit"] or "unknown",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1_5_15_at_start": list(os.getloadavg())},
        "corpus": str(cfile), "documents": len(docs), "client_timeout_s": args.client_timeout,
        "bursts": {}, "idle": None, "note": args.note,
    }
    with served_smoke_index(docs, "atomicrag-bench-burst-") as (_, httpd):
        idle_s = getattr(httpd, "idle_timeout_s", 15.0)  # a server without one (before issue 49): wait as long
        record["server"] = {"max_connections": getattr(httpd, "max_connections", None),
                            "idle_timeout_s": getattr(httpd, "idle_timeout_s", None),
                            "request_timeout_s": getattr(httpd, "request_timeout_s", None),
                            "backlog": httpd.request_queue_size, "module": http_server.__file__}
        port = httpd.server_address[1]
        for n in args.clients:
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CLIENT, str(port), str(n), str(args.client_timeout),
                                  question], capture_output=True, text=True, check=True,
                                 timeout=args.client_timeout * 3 + 60).stdout
            counts = json.loads(out)
            record["bursts"][str(n)] = {"outcomes": counts, "wall_s": round(time.perf_counter() - t0, 2)}
            print(f"{n} clients: {counts} in {record['bursts'][str(n)]['wall_s']} s", flush=True)
            time.sleep(1.0)  # the refusals' short read-away ends before the next burst
        if args.idle:
            base = threading.active_count()
            socks = []
            for _ in range(args.idle):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", port), timeout=30))
                except OSError as exc:  # a server that cannot take them: counted, not fatal
                    record.setdefault("idle_connect_errors", []).append(type(exc).__name__)
            time.sleep(1.0)
            held = threading.active_count() - base
            time.sleep(idle_s + 3)
            after = threading.active_count() - base
            closed = 0
            for s in socks:
                s.settimeout(0.05)  # a closed one answers EOF at once
                try:
                    while s.recv(65536):
                        pass
                    closed += 1
                except OSError:
                    pass
                s.close()
            record["idle"] = {"connections": args.idle, "threads_after_1s": held,
                              f"threads_after_{idle_s + 3:g}s": after,
                              "closed_by_server": closed}
            print(f"{args.idle} idle connections: {held} threads after 1 s, {after} after "
                  f"{idle_s + 3:g} s; {closed} closed by the server", flush=True)
    record["machine"]["load_avg_1_5_15_at_end"] = list(os.getloadavg())
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(out_path)  # atomic: a reader never sees half a record
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
