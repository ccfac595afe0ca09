"""One local LLM server kept up between commands (``atomicrag serve`` / ``serve --stop``).

Starting a vLLM server is most of a short answering command on a CPU machine, so a server that
outlives one ``atomicrag query`` saves that start in every later one. ``keep_resident`` detaches a
server the config launched from the command that started it, and records it in a state file
(``state_path()``: pid, port, model, log); ``find_resident`` is what every later vLLM backend asks
first: it returns the server's URL when the recorded process is alive, answers its health check
and serves the same model, and otherwise treats the state as stale (a killed server, a reboot) and
removes it, so the caller starts a server of its own. ``stop_resident`` ends the process group and its private temp
folder, leaving no process behind.

The state lives under the user's cache folder (``$ATOMICRAG_STATE_DIR``, else
``$XDG_CACHE_HOME/atomicrag``, else ``~/.cache/atomicrag``), one server per user.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from atomicrag.llm.openai_client import normalize_base_url
from atomicrag.llm.servers import LocalServer, _group_gone, is_ready

STATE_FILE = "server.json"


def state_dir() -> Path:
    if os.environ.get("ATOMICRAG_STATE_DIR"):
        return Path(os.environ["ATOMICRAG_STATE_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "atomicrag"


def state_path() -> Path:
    return state_dir() / STATE_FILE


def read_state() -> dict[str, Any] | None:
    try:
        state = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and {"pid", "base_url", "model"} <= state.keys() else None


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process of this user (another user's process reusing it is not ours)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process reuses the pid: not ours
        return False
    return True


def served_models(base_url: str, timeout_s: float = 3.0) -> list[str]:
    try:
        resp = httpx.get(f"{normalize_base_url(base_url)}/models", timeout=timeout_s)
        return [m.get("id", "") for m in resp.json().get("data", [])] if resp.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


def status() -> tuple[str, dict[str, Any] | None]:
    """``("running" | "stale" | "none", state)``: stale = recorded, but dead or not answering."""
    state = read_state()
    if state is None:
        return "none", None
    if pid_alive(int(state["pid"])) and is_ready(state["base_url"], timeout_s=3.0):
        return "running", state
    return "stale", state


def _forget(state: dict[str, Any] | None) -> None:
    state_path().unlink(missing_ok=True)
    for folder in (state or {}).get("cleanup", []):
        shutil.rmtree(folder, ignore_errors=True)


def find_resident(model: str) -> str | None:
    """The base URL of the resident server when it is up and serves ``model``; else None.

    A stale state (the process is gone or does not answer) is removed here, so the next
    command does not look again. A healthy server of another model is left alone.
    """
    kind, state = status()
    if kind == "stale":
        if state and pid_alive(int(state["pid"])):  # alive but not answering: ended, not left behind
            _kill_group(int(state["pid"]))
        _forget(state)
        return None
    if kind == "none" or state is None or model not in served_models(state["base_url"]):
        return None
    return str(state["base_url"])


def keep_resident(server: LocalServer, model: str, model_path: str = "") -> dict[str, Any]:
    """Keep a started ``server`` after this process exits: it is taken off the at-exit stop
    list and recorded in the state file."""
    from atomicrag.llm import servers as srv

    with srv._LIVE_LOCK:
        srv._LIVE.discard(server)  # outlives this command; serve --stop ends it
    assert server.proc is not None
    state = {"pid": server.proc.pid, "port": server.port, "base_url": server.base_url, "model": model,
             "model_path": model_path, "log": str(server.log_path), "cleanup": [str(p) for p in server.cleanup],
             "started": time.strftime("%Y-%m-%d %H:%M:%S"), "cmd": server.cmd}
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)
    return state


def _kill_group(pgid: int, grace_s: float = 15.0) -> bool:
    """SIGTERM the group (vLLM's API server stops its engine and workers), SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pgid)  # when this process started it (the same session), a zombie would count
            if _group_gone(pgid, 0.2):
                return True
    return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child: init reaps it
        pass


def stop_resident() -> tuple[bool, dict[str, Any] | None]:
    """End the resident server and forget it: ``(was one recorded, its state)``."""
    state = read_state()
    if state is None:
        _forget(None)
        return False, None
    pid = int(state["pid"])
    if pid_alive(pid) and not _kill_group(pid):
        raise RuntimeError(f"could not stop the server's process group {pid}; state kept in {state_path()}")
    _forget(state)
    return True, state
