#!/usr/bin/env bash
# Time the README's set-up as a new user meets it: a fresh clone of HEAD, an empty uv cache and
# an empty model-conversion cache, then scripts/setup_env.sh with the settings given in the
# environment (EXTRAS, VLLM_MODELS, ...). Every line it prints is prefixed with the seconds since
# the start, so each step's time can be read off; the exit status is setup_env.sh's own.
#
#   bash scripts/record_output.sh results/setup/setup_env_<date>.txt python scripts/bench.py time_setup
#   EXTRAS=cpu,dev,pg,wandb,plots,hf,llamacpp VLLM_MODELS="smollm2 qwen0.5b" \
#       bash scripts/record_output.sh results/setup/setup_full_<date>.txt python scripts/bench.py time_setup
#
# The clone and both caches are temporary and removed at the end; ../shared is linked beside the
# clone when this checkout has it, as in CI.
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/time_setup.XXXXXX")"
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/main"
if [ -d "$src/../shared" ]; then ln -s "$(cd "$src/../shared" && pwd)" "$work/shared"; fi
mkdir -p "$work/uv-cache" "$work/hf-cache"
echo "# fresh clone of $(git -C "$src" rev-parse --short HEAD); UV_CACHE_DIR and ATOMICRAG_HF_CACHE empty;" \
     "EXTRAS=${EXTRAS:-<default>} VLLM_MODELS=${VLLM_MODELS-<default>}"
start=$(date +%s)
cd "$work/main"
UV_CACHE_DIR="$work/uv-cache" ATOMICRAG_HF_CACHE="$work/hf-cache" bash scripts/setup_env.sh 2>&1 |
    while IFS= read -r line; do printf '[+%ds] %s\n' "$(( $(date +%s) - start ))" "$line"; done
rc=${PIPESTATUS[0]}
echo "[+$(( $(date +%s) - start ))s] setup_env.sh exit $rc"
exit "$rc"
