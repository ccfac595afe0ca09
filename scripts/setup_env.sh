#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install everything the README's
# two commands need. Idempotent: a stamp keyed by pyproject.toml skips work already done.
#
#   VENV=.venv            where the environment lives
#   TORCH_SPEC=...        torch requirement installed FIRST (default: the CPU build on this disk,
#                         torch==2.13.0; on a GPU machine e.g. TORCH_SPEC="torch>=2.4")
#   EXTRAS=cpu,dev,...    pyproject extras to install (add ,llamacpp for the llama.cpp backend)
#   VLLM_VENV, SKIP_VLLM  the vLLM server environment: see scripts/setup_vllm_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
EXTRAS="${EXTRAS:-cpu,dev,pg,wandb,plots,hf}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
stamp="$VENV/.atomicrag-stamp"
want="$(cat pyproject.toml scripts/setup_env.sh | sha256sum | cut -c1-16) $TORCH_SPEC $EXTRAS"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  VENV="$VENV" bash scripts/setup_vllm_env.sh  # the server env has its own stamp
  exit 0
fi
start=$(date +%s)
# torch first: a bare `torch` requirement pulled in by another package would otherwise fetch
# a multi-GB CUDA build on a CPU machine.
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "[setup] installing $TORCH_SPEC"
  "$VENV/bin/pip" install -q "$TORCH_SPEC"
fi
echo "[setup] installing atomicrag[$EXTRAS]"
"$VENV/bin/pip" install -q -e ".[$EXTRAS]"
echo "$want" > "$stamp"
echo "[setup] done in $(( $(date +%s) - start )) s"
VENV="$VENV" bash scripts/setup_vllm_env.sh
