#!/usr/bin/env bash
# Build (or reuse) the virtual environment that runs the AUTHORS' released AtomicRAG code beside
# ours, for the parity run (scripts/parity_released.py, driven by scripts/released/released_driver.py).
#
# The project never imports the released code: it runs in this separate interpreter, from the
# checkout the user names, installed from the package index with the released requirements
# (requirements/atomicrag.txt and setup.py), restricted to what its indexing + QA pipeline imports
# on CPU with an OpenAI-compatible LLM and a local BGE-style (mean-pooled) embedding model:
#
#   pinned as released: transformers==4.45.2 openai==1.92.1 litellm==1.73.1 networkx==3.4.2
#     python_igraph==0.11.8 tiktoken==0.7.0 pydantic==2.10.4 tenacity==8.5.0 gritlm==1.0.2
#     (gritlm and litellm are imported at package import time, though unused with this set-up)
#   unpinned as released: einops tqdm boto3 numpy scipy; imported but not listed: pandas filelock
#   changed: torch — the release pins torch==2.5.1, whose index build is the CUDA one (GBs of
#     NVIDIA libraries); the CPU build this machine's pip finds (torch 2.13.0+cpu) is used instead.
#   optional (RELEASED_EVAL=1): the Evaluation/ judge's LangChain stack (langchain_openai 0.3.28,
#     langchain_core 0.3.69, langchain_community, datasets 3.3.2, json5, json_repair, python-dotenv).
#
#   RELEASED_VENV=.venv-released   where it lives
#   RELEASED_CODE=../shared/released_code/AtomicRAG   the checkout (must hold atomicrag/atomicrag.py)
#   INSTALLER=uv|pip               see scripts/installer.sh
# Idempotent: a stamp keyed by this script skips a finished install.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/installer.sh
RELEASED_VENV="${RELEASED_VENV:-.venv-released}"
RELEASED_CODE="${RELEASED_CODE:-../shared/released_code/AtomicRAG}"
PY="${PYTHON:-python3}"

if [ ! -f "$RELEASED_CODE/atomicrag/atomicrag.py" ] || [ ! -f "$RELEASED_CODE/requirements/atomicrag.txt" ]; then
  echo "[setup-released] $RELEASED_CODE is not a checkout of the released AtomicRAG code" \
       "(expected atomicrag/atomicrag.py and requirements/atomicrag.txt); set RELEASED_CODE=" >&2
  exit 2
fi

stamp="$RELEASED_VENV/.atomicrag-released-stamp"
want="$(cat scripts/setup_released_env.sh scripts/installer.sh | sha256sum | cut -c1-16) eval=${RELEASED_EVAL:-0}"
start=$(date +%s)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[setup-released] $RELEASED_VENV is up to date"
  exit 0
fi
if [ ! -x "$RELEASED_VENV/bin/python" ]; then
  echo "[setup-released] creating $RELEASED_VENV"
  "$PY" -m venv "$RELEASED_VENV"
  if [ "$INSTALLER" = "pip" ]; then "$RELEASED_VENV/bin/pip" install -q --upgrade pip; fi
fi
ensure_uv "$RELEASED_VENV"
echo "[setup-released] installing the CPU torch first (so nothing resolves a CUDA build)"
pkg_install "$RELEASED_VENV" "torch==2.13.0"
echo "[setup-released] installing the released requirements the pipeline imports"
pkg_install "$RELEASED_VENV" "torch==2.13.0" \
  "transformers==4.45.2" "openai==1.92.1" "litellm==1.73.1" "networkx==3.4.2" \
  "python_igraph==0.11.8" "tiktoken==0.7.0" "pydantic==2.10.4" "tenacity==8.5.0" "gritlm==1.0.2" \
  einops tqdm boto3 numpy scipy pandas filelock httpx packaging
if [ "${RELEASED_EVAL:-0}" = "1" ]; then
  echo "[setup-released] installing the Evaluation/ judge stack"
  pkg_install "$RELEASED_VENV" "torch==2.13.0" "langchain_openai==0.3.28" "langchain_core==0.3.69" \
    "langchain==0.3.26" langchain_community "datasets==3.3.2" json5 json_repair python-dotenv
fi
pkg_uninstall "$RELEASED_VENV" torchvision torchaudio triton 2>/dev/null || true
# the import check runs the released package from the checkout, as the driver will
(cd "$RELEASED_CODE" && "$OLDPWD/$RELEASED_VENV/bin/python" -c "import atomicrag.atomicrag") \
  || { echo "[setup-released] the released package does not import in $RELEASED_VENV" >&2; exit 1; }
echo "$want" > "$stamp"
echo "[setup-released] ready in $(( $(date +%s) - start )) s"
