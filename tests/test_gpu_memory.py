"""GPU memory on CPU, with CUDA faked: the LLM server's share follows the run's needs, and an
out-of-memory error names the stage and the setting to lower."""
from __future__ import annotations

import pytest
import torch

from atomicrag.core.config import Config, LLMConfig
from atomicrag.core.gpu_memory import (
    GIB,
    MAX_FRACTION,
    MIN_FRACTION,
    GpuOutOfMemory,
    oom_names_stage,
    server_memory_fraction,
    server_oom_hint,
)
from atomicrag.harness.gpu_share import choose_llm_server_share
from atomicrag.llm.accounting import Accountant


def test_server_share_is_the_card_less_the_runs_needs() -> None:
    assert server_memory_fraction(80 * GIB, 10 * GIB) == pytest.approx((80 - 10 - 2) / 80, abs=1e-3)
    assert server_memory_fraction(80 * GIB, 0) == MAX_FRACTION  # never the whole card
    assert server_memory_fraction(24 * GIB, 30 * GIB) == MIN_FRACTION  # the run alone overfills it


def _cuda_vllm_cfg(**llm: object) -> Config:
    return Config(llm=LLMConfig(name="vllm", model="Qwen/Qwen2.5-7B-Instruct", model_path=None, device="cuda", **llm))


def test_harness_sets_the_share_from_the_plan_and_records_why() -> None:
    cfg = _cuda_vllm_cfg()
    plan = {"gpu_bytes": {"embedder_weights": 2 * GIB, "ppr_blocks": 6 * GIB}}
    share = choose_llm_server_share(cfg, plan, total_bytes=80 * GIB)
    assert cfg.llm.gpu_memory_utilization == pytest.approx(0.875, abs=1e-3)  # (80 - 8 - 2) / 80
    assert share is not None and share["chosen_by"] == "run plan" and share["others_gib"] == 8.0
    bigger = _cuda_vllm_cfg()
    choose_llm_server_share(bigger, {"gpu_bytes": {"ppr_blocks": 30 * GIB}}, total_bytes=80 * GIB)
    assert bigger.llm.gpu_memory_utilization < cfg.llm.gpu_memory_utilization  # more needs, smaller share


def test_an_explicit_share_wins_and_no_share_without_a_cuda_server() -> None:
    cfg = _cuda_vllm_cfg(gpu_memory_utilization=0.5)
    assert choose_llm_server_share(cfg, {"gpu_bytes": {"x": GIB}}, total_bytes=80 * GIB) == {
        "llm_fraction": 0.5, "chosen_by": "config"}
    for llm in (LLMConfig(name="vllm", device="cpu"), LLMConfig(name="fake"),
                LLMConfig(name="vllm", device="cuda", base_url="http://gpu-box:8000/v1")):
        c = Config(llm=llm)
        assert choose_llm_server_share(c, {"gpu_bytes": {"x": GIB}}, total_bytes=80 * GIB) is None
        assert c.llm.gpu_memory_utilization is None


def test_the_launched_server_gets_the_chosen_share(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from atomicrag.llm import backends

    seen: dict[str, object] = {}
    monkeypatch.setattr(backends, "launch_vllm", lambda *a, **kw: seen.update(kw) or "server")
    monkeypatch.setattr("atomicrag.llm.hf_models.find_server_python", lambda configured, device: "/usr/bin/python3")
    monkeypatch.setattr("atomicrag.llm.hf_models.hf_model", lambda name, python, cache: name)
    cfg = _cuda_vllm_cfg()
    choose_llm_server_share(cfg, {"gpu_bytes": {"ppr_blocks": 10 * GIB}}, total_bytes=40 * GIB)
    backends.launch_vllm_for(cfg.llm, cfg.paths)
    assert seen["gpu_memory_utilization"] == cfg.llm.gpu_memory_utilization == pytest.approx(0.7, abs=1e-3)


@pytest.mark.parametrize(("stage", "setting"), [("retrieve", "retriever.query_batch"),
                                                ("embed_atoms", "embedder.batch_size"),
                                                ("synonym_knn", "graph.synonym_batch")])
def test_an_out_of_memory_error_names_its_stage_and_setting(stage: str, setting: str) -> None:
    with pytest.raises(GpuOutOfMemory, match=rf"stage '{stage}'.*lower {setting}"):
        with oom_names_stage(stage):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_a_stage_timed_by_the_accountant_names_itself_and_other_errors_pass() -> None:
    acc = Accountant()
    with pytest.raises(GpuOutOfMemory, match="stage 'retrieve'.*retriever.query_batch"):
        with acc.time("retrieve"):
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)")
    with pytest.raises(ValueError, match="not memory"):
        with acc.time("retrieve"):
            raise ValueError("not memory")
    with pytest.raises(GpuOutOfMemory, match="stage 'retrieve'"):  # the innermost stage names it once
        with acc.time("answer"), acc.time("retrieve"):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")


def test_a_server_that_runs_out_at_start_up_says_which_setting() -> None:
    log = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    assert "llm.max_model_len" in (server_oom_hint(log) or "")
    assert server_oom_hint("ModuleNotFoundError: No module named 'vllm'") is None
