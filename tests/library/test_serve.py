"""``atomicrag serve`` keeps one LLM server up; later commands find it (health-checked) and reuse
it; ``serve --stop`` ends it and leaves no process; a stale record is detected and removed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from atomicrag.library.cli import main
from atomicrag.llm import resident
from atomicrag.llm.servers import LocalServer, free_port

ROOT = Path(__file__).resolve().parents[2]

# a stand-in OpenAI-compatible server: /v1/models lists one model (what the health check reads)
STUB = textwrap.dedent("""
    import http.server, json, sys
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": sys.argv[2]}]}).encode()
            self.send_response(200 if self.path.rstrip("/") == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json"); self.end_headers(); self.wfile.write(body)
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


@pytest.fixture()
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def stub_server(tmp_path: Path, model: str) -> LocalServer:
    port = free_port()
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    private = tmp_path / "private-tmp"
    private.mkdir()
    return LocalServer([sys.executable, str(script), str(port), model], port=port, log_path=tmp_path / "stub.log",
                       startup_timeout_s=30, name="stub server", cleanup=[private]).start()


def gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_kept_server_is_found_reused_and_stopped(tmp_path: Path, state_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    server = stub_server(tmp_path, "tiny-model")
    state = resident.keep_resident(server, "tiny-model")
    assert json.loads((state_dir / "server.json").read_text())["pid"] == server.proc.pid
    assert resident.find_resident("tiny-model") == server.base_url  # alive, healthy, same model
    assert resident.find_resident("other-model") is None  # another model: start one as before
    assert (state_dir / "server.json").is_file()  # ... and the healthy server is left alone
    assert main(["serve", "--status"]) == 0 and "running: tiny-model" in capsys.readouterr().out
    assert main(["serve", "--stop"]) == 0
    assert "stopped the tiny-model server" in capsys.readouterr().out
    assert gone(state["pid"]) and not (state_dir / "server.json").exists()
    assert not (tmp_path / "private-tmp").exists()  # its private temp folder too
    assert main(["serve", "--status"]) == 1 and main(["serve", "--stop"]) == 0


def test_a_killed_server_is_a_stale_record(tmp_path: Path, state_dir: Path) -> None:
    server = stub_server(tmp_path, "tiny-model")
    resident.keep_resident(server, "tiny-model")
    os.killpg(server.proc.pid, 9)
    server.proc.wait(timeout=10)
    assert resident.status()[0] == "stale"
    assert resident.find_resident("tiny-model") is None  # the caller starts its own server
    assert not (state_dir / "server.json").exists()


def test_serve_refuses_configs_without_a_local_server(state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--set", "llm=fake"]) == 2
    assert "llm.name=fake" in capsys.readouterr().err


@pytest.mark.vllm
@pytest.mark.slow
def test_query_reuses_the_served_vllm_server(tmp_path: Path) -> None:
    """The real CPU vLLM server: serve, then two answering queries start no server of their own."""
    from atomicrag.llm.hf_models import ServerEnvError, find_server_python

    try:
        python = find_server_python(None)
    except ServerEnvError as exc:
        pytest.skip(f"vLLM server environment absent ({exc})")
    if subprocess.run([python, "-c", "import vllm"], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{python} cannot import vllm: build .venv-vllm with scripts/setup_env.sh")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATOMICRAG_STATE_DIR": str(tmp_path / "state"),
           "HF_HUB_OFFLINE": "1"}
    def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "atomicrag.library.cli", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "marie.txt").write_text("Marie Curie was born in Warsaw in 1867.")
    cfg = tmp_path / "rag.yaml"
    cfg.write_text("embedder: fake\nreader: {name: precise, max_tokens: 32}\n"
                   "llm: {option: vllm_cpu, n_threads: 1, max_model_len: 2048}\n")
    assert cli("-q", "index", "docs", "--out", "idx", "--config", str(cfg)).returncode == 0
    up = cli("serve", "--config", str(cfg))
    assert up.returncode == 0, up.stderr[-3000:]
    pid = json.loads((tmp_path / "state" / "server.json").read_text())["pid"]
    try:
        for _ in range(2):
            t0 = time.perf_counter()
            # the LLM is the querying user's configuration (a saved index names none): the served one
            q = cli("query", "Where was Marie Curie born?", "--index", "idx", "--set", "llm=vllm_cpu",
                    "--set", "llm.n_threads=1", "--set", "llm.max_model_len=2048", timeout=300)
            assert q.returncode == 0, q.stderr[-3000:]
            assert "A: " in q.stdout
            assert "waiting for vLLM" not in q.stderr
            assert not (tmp_path / "cache" / "servers").exists()  # a server of its own would log there
            assert time.perf_counter() - t0 < 120
    finally:
        down = cli("serve", "--stop")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert gone(pid)
