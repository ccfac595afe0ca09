"""Finding the ``atomicrag serve`` process of an index and asking it: the state file a server
writes beside its index, the lookup the CLI does before loading an index itself, a query sent
over HTTP with its result rebuilt, and a stop request. The server itself is ``http_server``."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atomicrag.engine.api import pid_alive
from atomicrag.library.types import QueryResult, ResultItem


def server_state_path(index: str | Path) -> Path:
    """Where the server of ``index`` records itself: one file per index folder, in the user's
    state folder (``llm.resident.state_dir``: ``$ATOMICRAG_STATE_DIR`` or ``~/.cache/atomicrag``)."""
    from atomicrag.engine.api import state_dir

    key = hashlib.sha256(str(Path(index).resolve()).encode()).hexdigest()[:16]
    return state_dir() / f"http-{key}.json"


def _write_state(index: Path, url: str, port: int) -> Path:
    path = server_state_path(index)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"pid": os.getpid(), "port": port, "url": url, "index": str(index.resolve()),
             "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)  # atomic: a reader never sees half a record
    return path


def read_server_state(index: str | Path) -> dict[str, Any] | None:
    try:
        state = json.loads(server_state_path(index).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and {"pid", "url", "index"} <= state.keys() else None


def auth_headers() -> dict[str, str]:
    """The bearer token of ``$ATOMICRAG_API_KEY`` (what ``serve --index`` requires), if set."""
    from atomicrag.library.http_access import api_key_from_env

    key = api_key_from_env()
    return {"Authorization": f"Bearer {key}"} if key else {}


def _error_message(resp: Any) -> str:
    """The message of an error reply (OpenAI's ``{"error": {"message"}}``, or an older server's
    ``{"error": "..."}``), else its text."""
    try:
        err = resp.json().get("error", resp.text)
    except (ValueError, AttributeError):
        return str(resp.text)
    return str(err.get("message", err) if isinstance(err, dict) else err)


def find_index_server(index: str | Path, timeout_s: float = 2.0) -> str | None:
    """The URL of a running server of ``index`` (its process alive and ``/health`` naming this
    index, or refusing it for want of the token: ``remote_query`` then says so), else None; a
    stale record is removed."""
    import httpx

    state = read_server_state(index)
    if state is None:
        return None
    want = str(Path(index).resolve())
    try:
        if pid_alive(int(state["pid"])):
            resp = httpx.get(f"{state['url']}/health", timeout=timeout_s, headers=auth_headers())
            if resp.status_code == 200 and resp.json().get("index") == want:
                return str(state["url"])
            if resp.status_code == 401 and resp.json()["error"].get("code") == "invalid_api_key":
                return str(state["url"])  # our server (its pid is alive), which needs the token
    except (httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError):
        pass
    # dead, not answering, or another index's server on a reused port: forget the record
    server_state_path(index).unlink(missing_ok=True)
    return None


# ---------------------------------------------------------------------------------- client
def result_from_dict(data: dict[str, Any]) -> QueryResult:
    """A ``QueryResult`` from its ``to_dict()`` form; fields this version does not know are kept
    out (a newer server may send more)."""
    import dataclasses

    known = {f.name for f in dataclasses.fields(QueryResult)}
    item_fields = {f.name for f in dataclasses.fields(ResultItem)}
    values = {k: v for k, v in data.items() if k in known}
    values["items"] = [ResultItem(**{k: v for k, v in it.items() if k in item_fields})
                       for it in data.get("items", [])]
    from atomicrag.engine.api import Source

    source_fields = {f.name for f in dataclasses.fields(Source)}
    values["sources"] = [Source(**{k: v for k, v in s.items() if k in source_fields})
                         for s in data.get("sources", [])]
    return QueryResult(**values)


def remote_query(url: str, questions: Sequence[str], *, answer: bool | None = None,
                 timeout_s: float | None = None) -> list[QueryResult]:
    """Ask a running server (``POST /query``); an HTTP error raises ``RuntimeError`` with its message."""
    import httpx

    body: dict[str, Any] = {"questions": list(questions)}
    if answer is not None:
        body["answer"] = answer
    resp = httpx.post(f"{url}/query", json=body, timeout=timeout_s, headers=auth_headers())
    if resp.status_code != 200:
        hint = " (set ATOMICRAG_API_KEY to its token, or pass --no-server)" if resp.status_code == 401 else ""
        raise RuntimeError(f"the index server at {url} answered {resp.status_code}: {_error_message(resp)}{hint}")
    return [result_from_dict(r) for r in resp.json()["results"]]


# ---------------------------------------------------------------------------------- service
def stop_index_server(index: str | Path, timeout_s: float = 30.0) -> dict[str, Any] | None:
    """SIGTERM the running server of ``index`` and wait until it is gone; its state, or None."""
    state = read_server_state(index)
    if state is None or not find_index_server(index):
        return None
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        raise RuntimeError(f"the server of {index} (pid {pid}) did not stop within {timeout_s:g} s")
    server_state_path(index).unlink(missing_ok=True)
    return state
