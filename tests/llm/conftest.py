"""Fixtures for the LLM tests."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from atomicrag.llm.servers import LocalServer


@pytest.fixture()
def stub() -> Iterator[StubServer]:
    server = StubServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


# ---------------------------------------------------------------- a real CPU vLLM server
# One server per test run (start-up ~25-40 s), shared by every test marked ``vllm``. It is
# skipped, saying why, only when the server environment or the offline model is absent;
# scripts/setup_env.sh builds both (CI does).
class VllmHandle:
    """The session's vLLM server; tests that stop or kill it call ``restart()``."""

    def __init__(self, python: str, model: str, log_dir: Path) -> None:
        self.python, self.model, self.log_dir = python, model, log_dir
        self.served = "smollm2"
        self.max_model_len = 2048
        # One core: as fast as two at decoding (what these tests do) and robust on a busy machine.
        self.port = 0
        self.server: LocalServer | None = None

    def start(self) -> LocalServer:
        from atomicrag.llm.servers import launch_vllm

        self.server = launch_vllm(
            self.model, log_dir=self.log_dir, served_model_name=self.served, python=self.python,
            port=self.port, device="cpu", enforce_eager=True, max_model_len=self.max_model_len,
            kv_cache_gb=1, cpu_threads=1, startup_timeout_s=300)
        self.port = self.server.port  # a restart comes back on the same URL
        return self.server

    @property
    def base_url(self) -> str:
        if self.server is None or not self.server.is_running():  # stopped by an earlier test
            self.restart()
        assert self.server is not None
        return self.server.base_url

    def restart(self) -> LocalServer:
        if self.server is not None:
            self.server.stop()
        return self.start()


@pytest.fixture(scope="session")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmHandle]:
    from atomicrag.core.offline_models import OfflineModelError
    from atomicrag.llm.hf_models import ServerEnvError, find_server_python, hf_model

    try:
        python = find_server_python(os.environ.get("ATOMICRAG_VLLM_PYTHON"))
    except ServerEnvError as exc:
        pytest.skip(f"vLLM server environment absent ({exc})")
    if subprocess.run([python, "-c", "import vllm"], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{python} cannot import vllm: build .venv-vllm with scripts/setup_env.sh")
    try:
        model = hf_model("smollm2", python, tmp_path_factory.mktemp("gguf"))
    except OfflineModelError as exc:
        pytest.skip(f"offline SmolLM2 model absent ({exc})")
    handle = VllmHandle(python, model, tmp_path_factory.mktemp("vllm-logs"))
    handle.start()
    yield handle
    if handle.server is not None:
        handle.server.stop()
