"""Two real servers behind one client (``llm.base_urls``): both get work, a killed replica's
requests finish on the other, and the per-endpoint accounting adds up to the results'.

The second replica is llama.cpp on the same SmolLM2 weights when llama-cpp-python is
installed (little memory; its own structured-output dialect, probed), else a second vLLM.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import VllmHandle
from test_llm_vllm_real import TOPIC_SCHEMA, _topic_request

from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatResult
from atomicrag.llm.servers import LocalServer, launch_llamacpp, llamacpp_server_missing

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


@pytest.fixture()
def second(vllm: VllmHandle, tmp_path: Path) -> Iterator[LocalServer]:
    if not llamacpp_server_missing():
        from atomicrag.core.offline_models import resolve_model_path

        srv = launch_llamacpp(resolve_model_path("smollm2"), log_dir=tmp_path, n_threads=1, n_ctx=2048,
                              model_alias=vllm.served, startup_timeout_s=180)
    else:
        other = VllmHandle(vllm.python, vllm.model, tmp_path)
        srv = other.start()
    yield srv
    srv.stop()


def _sum(results: list[ChatResult], field: str) -> int:
    return sum(getattr(r, field) for r in results)


def test_two_replicas_share_work_and_survive_one_dying(vllm: VllmHandle, second: LocalServer) -> None:
    client = OpenAIClient("unused", vllm.served, base_urls=[vllm.base_url, second.base_url], concurrency=2,
                          max_retries=2, timeout_s=900, backoff_base_s=0.2)
    kinds = [info.kind for info in client.probe()]
    assert kinds[0] == "vllm" and kinds[1] in ("vllm", "llama-cpp-python")
    tag = f"replicas {time.time_ns()}: "
    first = client.chat([_topic_request(i, tag) for i in range(8)])
    stats = client.endpoint_stats()
    assert all(s["replies"] > 0 for s in stats), stats  # both replicas got work
    assert sum(s["prompt_tokens"] for s in stats) == _sum(first, "prompt_tokens")
    assert sum(s["completion_tokens"] for s in stats) == _sum(first, "completion_tokens")

    out: list[list[ChatResult]] = []
    worker = threading.Thread(target=lambda: out.append(
        client.chat([_topic_request(i, tag + "phase 2 ") for i in range(8)])))
    replies_before = stats[1]["replies"]
    worker.start()
    deadline = time.monotonic() + 120
    while client.endpoint_stats()[1]["replies"] <= replies_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert second.proc is not None
    os.killpg(second.proc.pid, signal.SIGKILL)  # replica 2 dies with requests in flight
    worker.join(timeout=180)
    assert not worker.is_alive()
    [results] = out
    # every request finished on the surviving replica: a schema-valid reply, or (the model's own
    # failure) a reply off-schema after every retry; never a transport error from the dead one
    for r in results:
        if r.ok:
            jsonschema.validate(r.parsed, TOPIC_SCHEMA)
        else:
            assert "Error" not in (r.error or ""), r.error
    assert sum(r.ok for r in results) >= len(results) // 2
    stats = client.endpoint_stats()
    assert stats[1]["down"] and stats[1]["errors"] > 0 and stats[0]["replies"] > 0
    every = first + results
    assert sum(s["prompt_tokens"] for s in stats) == _sum(every, "prompt_tokens")
    assert sum(s["completion_tokens"] for s in stats) == _sum(every, "completion_tokens")
    assert sum(s["sent"] for s in stats) == _sum(every, "attempts")  # each attempt went to one endpoint
