"""``atomicrag setup`` builds the vLLM server environment under the user's cache (found by the
launcher afterwards), and a missing piece of answering is reported before indexing, not at the
first query after it."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from atomicrag.library import readiness, setup_cmd
from atomicrag.library.api import AtomicRAG
from atomicrag.library.cli import main
from atomicrag.llm import hf_models
from atomicrag.llm.fake import FakeLLM

from .conftest import DOCS, base_config


@pytest.fixture()
def no_server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing can run vLLM: no configured interpreter, no checkout .venv-vllm, an empty cache."""
    monkeypatch.delenv("ATOMICRAG_VLLM_PYTHON", raising=False)
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "no-checkout-venv"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    monkeypatch.delenv("ATOMICRAG_VLLM_VENV", raising=False)
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(hf_models.importlib.util, "find_spec", lambda name: None)  # no vllm here either
    return tmp_path / "cache-home" / "atomicrag" / "venv-vllm"


def answering_config() -> dict:
    return base_config(llm={"name": "vllm", "model": "smollm2-135m-instruct", "model_path": "smollm2"},
                       reader={"name": "precise"})


def test_setup_builds_the_env_where_the_launcher_then_finds_it(no_server_env: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(hf_models.ServerEnvError, match="atomicrag setup"):
        hf_models.find_server_python()
    ran: list[list[str]] = []

    def fake_run(cmd: Sequence[str]) -> None:  # stands in for pip: makes the interpreter appear
        ran.append(list(cmd))
        if cmd[1:3] == ["-m", "venv"]:
            (Path(cmd[3]) / "bin").mkdir(parents=True)
            (Path(cmd[3]) / "bin" / "python").symlink_to(Path(setup_cmd.sys.executable).resolve())

    monkeypatch.setattr(hf_models, "hf_model", lambda spec, python, cache_dir: f"/models/{spec}")
    python = setup_cmd.setup(models=["smollm2"], run=fake_run)
    assert python == str(no_server_env / "bin" / "python")
    assert hf_models.find_server_python() == python  # the launcher looks there by default
    torch_step = next(c for c in ran if any(a.startswith("torch==") for a in c))
    vllm_step = next(c for c in ran if setup_cmd.VLLM_SPEC in c)
    assert ran.index(torch_step) < ran.index(vllm_step)  # the CPU torch before anything could pull CUDA
    assert setup_cmd.TORCH_CPU_INDEX in torch_step
    assert any(c[3:5] == ["uninstall", "-y"] and "triton" in c for c in ran)
    ran.clear()
    assert setup_cmd.setup(models=[], run=fake_run) == python and ran == []  # found: nothing rebuilt


def test_check_reports_and_fails_when_missing(no_server_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["setup", "--check"]) == 1
    assert "vLLM server environment: not found (run `atomicrag setup`)" in capsys.readouterr().out


def test_cuda_torch_where_no_gpu_is_named_with_what_to_run() -> None:
    # PyPI's Linux torch: no local label, nvidia-* packages beside it
    problem = setup_cmd.cuda_torch_problem("2.14.1", ["nvidia-cublas-cu12", "nvidia-cudnn-cu12"], gpu=False)
    assert problem and "CUDA build" in problem
    assert "pip uninstall -y torch nvidia-cublas-cu12 nvidia-cudnn-cu12" in problem
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in problem
    assert setup_cmd.cuda_torch_problem("2.13.0+cu128", [], gpu=False)  # PyTorch's CUDA index
    assert setup_cmd.cuda_torch_problem("2.13.0+cu128", ["nvidia-cublas-cu12"], gpu=True) is None
    assert setup_cmd.cuda_torch_problem("2.13.0+cpu", [], gpu=False) is None
    assert setup_cmd.cuda_torch_problem("2.13.0", [], gpu=False) is None  # macOS/Windows: PyPI's is CPU
    assert "not installed" in (setup_cmd.cuda_torch_problem(None, [], gpu=False) or "")


def test_setup_stops_before_building_on_a_cuda_torch_without_gpu(no_server_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(setup_cmd, "_run", lambda cmd: ran.append(list(cmd)))
    monkeypatch.setattr(setup_cmd, "torch_build_problem",
                        lambda: setup_cmd.cuda_torch_problem("2.14.1", ["nvidia-cublas-cu12"], gpu=False))
    monkeypatch.delenv("ATOMICRAG_ALLOW_CUDA_TORCH", raising=False)
    assert main(["setup", "--models", "none"]) == 1
    err = capsys.readouterr().err
    assert "torch 2.14.1 is a CUDA build" in err and "pip uninstall -y torch nvidia-cublas-cu12" in err
    assert ran == []  # nothing was built
    assert main(["setup", "--check"]) == 1
    assert "CUDA build" in capsys.readouterr().out


def test_this_environments_torch_passes_the_check() -> None:
    # the suite runs on a CPU torch (or a CUDA one on a GPU machine): no problem either way
    assert setup_cmd.torch_build_problem() is None


def test_dry_run_prints_commands_a_shell_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    assert main(["setup", "--dry-run", "--venv", str(tmp_path / "v")]) == 0
    lines = capsys.readouterr().out.splitlines()
    vllm = next(line for line in lines if setup_cmd.VLLM_SPEC in line)
    assert "'gguf>=0.10'" in vllm  # unquoted, a pasted line would redirect into a file named =0.10
    assert "gguf>=0.10" in shlex.split(vllm)


def test_index_refuses_before_work_when_nothing_can_answer(no_server_env: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        rag = AtomicRAG(answering_config())
    assert "answering (reader.name is not none) will fail" in caplog.text and "atomicrag setup" in caplog.text
    with pytest.raises(readiness.AnsweringUnavailable, match="no vLLM server environment"):
        rag.index(DOCS[:3])
    assert len(rag) == 0
    caplog.clear()
    # retrieval only, or your own LLM: nothing to check, no warning
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        AtomicRAG(base_config(llm={"name": "vllm"}, reader={"name": "none"})).index(DOCS[:3])
        assert len(AtomicRAG(answering_config(), llm=FakeLLM("mine")).index(DOCS[:3])) == 3
    assert "will fail" not in caplog.text


def test_index_proceeds_once_an_env_exists(no_server_env: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (no_server_env / "bin").mkdir(parents=True)
    (no_server_env / "bin" / "python").symlink_to(Path(setup_cmd.sys.executable).resolve())
    assert readiness.answering_problems(AtomicRAG(answering_config()).config) == []
    assert len(AtomicRAG(answering_config()).index(DOCS[:3])) == 3


def test_cli_index_fails_up_front(no_server_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    (tmp_path / "d.txt").write_text(DOCS[0]["text"])
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(answering_config()))
    assert main(["-q", "index", str(tmp_path / "d.txt"), "--out", str(tmp_path / "idx"), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "atomicrag setup" in err and not (tmp_path / "idx").exists()
