"""Score answers with the AUTHORS' released Graph-Bench judge (its ``Evaluation/`` package), as JSON.

Runs in ``.venv-released`` built with ``RELEASED_EVAL=1 scripts/setup_released_env.sh`` (the
judge's LangChain stack); the project never imports the released code. ``scripts/parity_released.py``
starts it after both pipelines answered, so the released judge and ours score the same answers
through the same recording proxy:

    .venv-released/bin/python scripts/released/released_judge_driver.py --checkout ../shared/released_code/AtomicRAG \
        --items judge_items.json --llm-base-url http://127.0.0.1:PORT/c/released_judge/v1 \
        --model qwen2.5-coder-0.5b-instruct --embed-model /path/to/all-MiniLM-L6-v2 --out released_judge.json

Set as the released ``Evaluation/generation_eval.py`` sets it: ``ChatOpenAI`` at temperature 0,
top_p 1, seed 42, no presence/frequency penalty, 3 client retries, a 30 s timeout; LangChain's
``HuggingFaceBgeEmbeddings`` for the similarity (its query instruction, ``embed_query``); each
sample scored by the released ``compute_answer_correctness`` and retried up to 3 times, then 0, a
``SkipSampleError`` leaving it out, as its ``evaluate_dataset`` does. Changed for a CPU machine
with local models: the LLM is the one behind ``--llm-base-url`` (key "dummy"), the embedder the
local folder ``--embed-model``; samples run one at a time (the released default runs 20 at once,
which changes only when each reply arrives).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

SEED = 42  # the released evaluation's seed (generation_eval.SEED)
RETRIES = 3  # evaluate_dataset's tries per sample


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", required=True)
    ap.add_argument("--items", required=True, help="JSON list of {id, question, answer, ground_truth}")
    ap.add_argument("--llm-base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--embed-model", required=True, help="local sentence-transformers folder")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    checkout = Path(args.checkout).resolve()
    if not (checkout / "Evaluation" / "metrics" / "answer_accuracy.py").is_file():
        print(f"released_judge_driver: {checkout} has no Evaluation/metrics/answer_accuracy.py", file=sys.stderr)
        return 2
    sys.path.insert(0, str(checkout))
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    from Evaluation.metrics import SkipSampleError, compute_answer_correctness
    from langchain_community.embeddings import HuggingFaceBgeEmbeddings
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    llm = ChatOpenAI(model=args.model, base_url=args.llm_base_url, api_key=SecretStr("dummy"), temperature=0.0,
                     max_retries=3, timeout=30,
                     model_kwargs={"top_p": 1, "seed": SEED, "presence_penalty": 0, "frequency_penalty": 0})
    embeddings = HuggingFaceBgeEmbeddings(model_name=str(Path(args.embed_model).resolve()))
    items: list[dict[str, Any]] = json.loads(Path(args.items).read_text(encoding="utf-8"))

    async def score(item: dict[str, Any]) -> dict[str, Any]:
        error = None
        for _attempt in range(RETRIES):
            try:
                acc = await compute_answer_correctness(item["question"], item["answer"], item["ground_truth"],
                                                       llm, embeddings)
                return {"id": item["id"], "acc": float(acc), "status": "ok"}
            except SkipSampleError as exc:
                return {"id": item["id"], "acc": None, "status": f"skipped: {exc}"}
            except Exception as exc:  # noqa: BLE001 - the released loop retries anything, then scores 0
                error = f"{type(exc).__name__}: {exc}"
        return {"id": item["id"], "acc": 0.0, "status": f"failed {RETRIES} times, scored 0: {error}"}

    async def run_all() -> list[dict[str, Any]]:
        return [await score(item) for item in items]

    result = {"driver": "released_judge", "checkout": str(checkout), "scores": asyncio.run(run_all())}
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(args.out)  # atomic: a crash never leaves a half-written result
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
