"""scripts/setup_vllm_gpu_env.sh in a fake environment: its python answers pip by logging the
arguments and imports a fake torch/vllm, so the checks after the install run for real: the pinned
vLLM/torch pair, never a +cpu torch or the machine's CPU wheel sources, and a clear stop when
torch.cuda.is_available() is false."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "setup_vllm_gpu_env.sh"

FAKE_TORCH = """
import os
__version__ = os.environ["FAKE_TORCH_VERSION"]
class version:
    cuda = os.environ.get("FAKE_CUDA") or None
class cuda:
    @staticmethod
    def is_available():
        return os.environ.get("FAKE_AVAILABLE") == "1"
    @staticmethod
    def device_count():
        return 1 if cuda.is_available() else 0
    @staticmethod
    def get_device_name(i=0):
        return "Fake H100"
"""


def fake_env(tmp: Path) -> Path:
    venv, site = tmp / "venv", tmp / "site"
    (venv / "bin").mkdir(parents=True)
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    api = site / "vllm" / "entrypoints" / "openai"
    api.mkdir(parents=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", api):
        (d / "__init__.py").write_text("")
    (api / "api_server.py").write_text("")
    info = site / "vllm-0.32.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n")
    py = venv / "bin" / "python"
    py.write_text(f"""#!/bin/bash
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> {tmp / 'pip.log'}; exit 0; fi
PYTHONPATH={site} exec {sys.executable} "$@"
""")
    py.chmod(0o755)
    return venv


def run(tmp: Path, **env: str) -> subprocess.CompletedProcess:
    venv = fake_env(tmp)
    full = {**os.environ, "VLLM_GPU_VENV": str(venv), "INSTALLER": "pip", "FAKE_TORCH_VERSION": "2.13.0",
            "FAKE_CUDA": "12.8", "FAKE_AVAILABLE": "1",
            # this machine's kind of pip setup: CPU torch wheels beside PyPI
            "PIP_FIND_LINKS": "/opt/torch-cpu-wheels", "PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu",
            **env}
    return subprocess.run(["bash", str(SCRIPT)], env=full, capture_output=True, text=True, timeout=120, check=False)


def test_a_cuda_torch_that_sees_a_gpu_passes_with_the_pinned_pair_from_pypi_alone(tmp_path: Path) -> None:
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pip = (tmp_path / "pip.log").read_text()
    assert "--index-url https://pypi.org/simple vllm==0.32.0 torch==2.13.0" in pip
    assert "cpu" not in pip and "find-links" not in pip  # the machine's CPU wheel sources are not used
    assert "torch 2.13.0, CUDA 12.8, 1 GPU(s): Fake H100" in proc.stdout
    assert (tmp_path / "venv" / ".atomicrag-vllm-stamp").is_file()


@pytest.mark.parametrize(("version", "cuda", "message"), [
    ("2.13.0+cpu", "", "is a CPU build"),
    ("2.13.0", "", "is a CPU build"),
    ("2.12.0", "12.8", "vLLM's pin is torch==2.13.0"),
])
def test_a_cpu_or_unpinned_torch_stops_the_setup(tmp_path: Path, version: str, cuda: str, message: str) -> None:
    proc = run(tmp_path, FAKE_TORCH_VERSION=version, FAKE_CUDA=cuda)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert not (tmp_path / "venv" / ".atomicrag-vllm-stamp").exists()


def test_no_gpu_stops_with_a_clear_message(tmp_path: Path) -> None:
    proc = run(tmp_path, FAKE_AVAILABLE="0")
    assert proc.returncode == 1
    assert "sees no GPU" in proc.stderr and "scripts/setup_vllm_env.sh" in proc.stderr


def test_dry_run_names_the_pair_and_refuses_a_cpu_index(tmp_path: Path) -> None:
    proc = run(tmp_path, DRY_RUN="1")
    assert proc.returncode == 0
    assert "vllm==0.32.0 torch==2.13.0 from --index-url https://pypi.org/simple (pip configuration ignored)" in proc.stdout
    assert not (tmp_path / "pip.log").exists()
    bad = run(tmp_path / "b", DRY_RUN="1", TORCH_GPU_INDEX="https://download.pytorch.org/whl/cpu")
    assert bad.returncode == 1 and "PyTorch's CPU index" in bad.stderr
