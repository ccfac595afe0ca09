#!/usr/bin/env bash
# One prepared call on a lent GPU machine that measures every GPU path of the project. The machine is
# bare: its image's Python (PyTorch, numpy, transformers... scripts/device/device_image_packages.txt), no
# package index, no model hub; the repository travels, and with it the wheelhouse of what the image
# lacks (.device_wheels/, built here by scripts/device/build_device_wheelhouse.sh; name it in `carry`).
#
#   scripts/device_check.sh                       # on the GPU machine: $OUT set by the device tool
#   scripts/device_check.sh --small               # CPU dry run: small sizes, same steps (CI runs it)
#   scripts/device_check.sh --rerun=FILE          # only the steps FILE (a summary.txt) marks FAIL
#   scripts/device_check.sh --only=exact_ppr,knn  # just these steps
#
# Steps, each with a time limit (GPU mode; they add up to LIMIT_TOTAL <= 420 s, printed first):
#   env        torch, CUDA, the card, which packages are there
#   wheels     the wheelhouse installed with pip --no-index into a folder first on PYTHONPATH (the
#              image's packages stay visible); checksums checked first
#   exact_ppr  float64 exact PPR (fidelity.ppr_solve=exact) on the device against the CPU
#   ppr_batch  batched PPR at HotpotQA scale, B = 1,024, against igraph PRPACK per query on the
#              machine's CPUs in the same process: the ratio (benchmarks/retrieval.py)
#   embed      bge-large's architecture with random weights in fp32/fp16/bf16, configured at 2,048
#              tokens (clamped to 512): tokens/s
#   knn        entity KNN at 200k and 1M entities (torch blocks: no GPU index in image or wheelhouse)
#   harness    an end-to-end harness run with the fake LLM, embedder/graph/retriever on the device
#   memory     the run plan's GPU memory per part beside torch.cuda.max_memory_allocated
# A step passes only if its command exits 0 AND its log holds its figure (EXPECT below): nothing
# passes by skipping. Every log goes into ONE archive, $OUT/device_check.tar.gz; $OUT/summary.txt
# (also in the archive) has one PASS/FAIL line per step. Exit status: 0 only if every step passed.
set -u
cd "$(dirname "$0")/.."
SMALL=0
ONLY=""
RERUN=""
for arg in "$@"; do
  case "$arg" in
    --small|--dry) SMALL=1 ;;
    --only=*) ONLY=",${arg#--only=}," ;;
    --rerun=*) RERUN=${arg#--rerun=} ;;
    *) echo "unknown argument: $arg (expected --small, --only=STEP,..., --rerun=SUMMARY)" >&2; exit 2 ;;
  esac
done
if [ -n "$RERUN" ]; then
  [ -f "$RERUN" ] || { echo "--rerun: no such file: $RERUN (the summary.txt of the earlier call)" >&2; exit 2; }
  failed=$(sed -n 's/^\[\([a-z_]*\)\] FAIL.*/\1/p' "$RERUN" | tr '\n' ',')
  [ -n "$failed" ] || { echo "--rerun: $RERUN marks no step FAIL: nothing to re-run" >&2; exit 0; }
  ONLY=",$failed"
fi
OUT=${OUT:-$PWD/device_check_out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)  # the logs stay outside $OUT: only the archive and the summary come back
WORK_GIVEN=${DEVICE_CHECK_WORK:-}
WORK=${WORK_GIVEN:-$(mktemp -d)}  # random model folders, harness runs, the installed wheels
export DEVICE_CHECK_WORK=$WORK
PY=${PYTHON:-$(command -v python3 || command -v python)}
WHEELS=${WHEELS:-.device_wheels}
export PYTHONPATH="$PWD:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
START=$(date +%s)
FAILED=0

if [ "$SMALL" = 1 ]; then
  DEV=cpu; SLOW=3  # a shared 2-core CPU: the dry run checks the plumbing, each step gets 3x its limit
  PPR_ARGS="--scales medium --queries 64 --batches 64 --sample 8 --b1 2 --reps 1 --threads 2"
  EXACT_ARGS="--nodes 3000 --queries 16"; EMBED_ARGS="--texts 32 --batch 16"; KNN_ARGS="--entities 2000,4000 --cpu-slice 1000"
  HARNESS_ARGS="--questions 2"; SIZE=--small
else
  DEV=cuda; SLOW=1; THREADS=$(nproc 2>/dev/null || echo 8)
  PPR_ARGS="--scales hotpot --queries 1024 --batches 1024 --sample 32 --b1 16 --reps 3 --threads $THREADS"
  EXACT_ARGS="--nodes 200000 --queries 256"; EMBED_ARGS="--texts 4096 --batch 128"
  KNN_ARGS="--entities 200000,1000000 --cpu-slice 20000"; HARNESS_ARGS="--questions 8"; SIZE=""
fi

# name limit(s) expect(regex the log must hold)
STEPS="env:10:^torch
wheels:20:^wheels (installed|none)
exact_ppr:40:^exact_ppr float64
ppr_batch:90:^ratio_vs_igraph=[0-9]
embed:60:^embed_tokens_per_s .* ok$
knn:80:^knn sizes .*: ok$
harness:70:^harness_run device=
memory:50:^memory_plan_mib="
LIMIT_TOTAL=$(echo "$STEPS" | awk -F: '{s += $2} END {print s}')

note() { echo "$*" | tee -a "$SUMMARY"; }

finish() {
  trap - EXIT TERM INT
  note "total $(( $(date +%s) - START ))s of limits ${LIMIT_TOTAL}s (x$SLOW); $FAILED step(s) failed"
  cp "$SUMMARY" "$OUT/summary.txt"
  tar czf "$OUT/device_check.tar.gz.partial" -C "$LOGS" . && mv "$OUT/device_check.tar.gz.partial" "$OUT/device_check.tar.gz"
  rm -rf "$LOGS"
  [ -n "$WORK_GIVEN" ] || rm -rf "$WORK"
  exit $(( FAILED > 0 ? 1 : 0 ))
}
trap finish EXIT
trap 'note "interrupted"; FAILED=$((FAILED + 1)); finish' TERM INT

# step NAME CMD...: runs under NAME's limit, logs to NAME.log; PASS needs rc 0 and the EXPECT line
step() {
  local name=$1; shift
  local spec limit expect
  spec=$(echo "$STEPS" | grep "^$name:")
  limit=$(( $(echo "$spec" | cut -d: -f2) * SLOW )); expect=$(echo "$spec" | cut -d: -f3-)
  # env and wheels always run: a later step needs the installed wheels on a fresh machine
  if [ -n "$ONLY" ] && [[ "$ONLY" != *",$name,"* ]] && [ "$name" != env ] && [ "$name" != wheels ]; then return 0; fi
  local t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  local last
  last=$(grep -E "$expect" "$LOGS/$name.log" | tail -n 1)
  [ -n "$last" ] || last=$(grep -v '^\s*$' "$LOGS/$name.log" | tail -n 1)
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    FAILED=$((FAILED + 1)); note "[$name] FAIL timed out after ${limit}s: $last"
  elif [ $rc != 0 ]; then
    FAILED=$((FAILED + 1)); note "[$name] FAIL rc=$rc in ${dt}s: $last"
  elif ! grep -Eq "$expect" "$LOGS/$name.log"; then
    FAILED=$((FAILED + 1)); note "[$name] FAIL rc=0 in ${dt}s but no line matches /$expect/: $last"
  else
    note "[$name] PASS in ${dt}s: $last"
  fi
}

env_report() {
  echo "date: $(date -u)"; echo "host: $(hostname)"; echo "mode: $([ $SMALL = 1 ] && echo small-cpu || echo full-cuda)"
  "$PY" -c "import sys, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available(), 'python', sys.version.split()[0]); print('devices', [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])" || return 1
  for m in numpy scipy transformers safetensors igraph omegaconf hydra jsonschema bm25s; do
    "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$m') is None)" 2>/dev/null \
      && echo "package $m: present" || echo "package $m: missing"
  done
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cpus $(nproc)"; free -g 2>/dev/null | head -2
  if [ "$SMALL" = 0 ]; then "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || { echo "CUDA is not available: run with --small for the CPU dry run"; return 1; }; fi
}

install_wheels() {
  if [ ! -d "$WHEELS" ]; then
    # the dry run may use the interpreter's own packages; on the device the wheelhouse is required
    if [ "$SMALL" = 1 ]; then echo "wheels none: $WHEELS absent, the interpreter's packages are used"; return 0; fi
    echo "no wheelhouse at $WHEELS: build it with scripts/device/build_device_wheelhouse.sh and name it in carry"; return 1
  fi
  (cd "$WHEELS" && sha256sum -c --quiet SHA256SUMS) || { echo "wheelhouse checksums differ"; return 1; }
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl || return 1
  echo "wheels installed: $(ls "$WHEELS"/*.whl | wc -l) into $SITE"
}

export SMALL PY WHEELS
export -f env_report install_wheels  # run by `timeout bash -c` (timeout runs programs, not functions)
note "device check: mode $([ $SMALL = 1 ] && echo small-cpu || echo full-cuda), limits ${LIMIT_TOTAL}s (x$SLOW)${ONLY:+, only ${ONLY//,/ }}"
export SITE="$WORK/site"
step env bash -c env_report
step wheels bash -c install_wheels
[ -d "$SITE" ] && export PYTHONPATH="$SITE:$PYTHONPATH"
BD=("$PY" benchmarks/device.py)
COMMON="--device $DEV --work $WORK $SIZE"
step exact_ppr "${BD[@]}" exact $COMMON $EXACT_ARGS
step ppr_batch "$PY" benchmarks/retrieval.py --device "$DEV" --quick $PPR_ARGS
step embed "${BD[@]}" embed $COMMON $EMBED_ARGS
step knn "${BD[@]}" knn $COMMON $KNN_ARGS
step harness "${BD[@]}" harness $COMMON $HARNESS_ARGS
step memory "${BD[@]}" memory $COMMON
