#!/usr/bin/env bash
# What `atomicrag serve` (the kept-up LLM server, docs/library.md "Keeping the LLM server up") saves:
# index the 2Wiki smoke passages with the defaults, then time
#   1. a cold `atomicrag -q query` that starts its own vLLM server and stops it again,
#   2. `atomicrag serve` until it returns with the server up,
#   3. the same query twice while it runs (each must start no server of its own),
#   4. `atomicrag serve --stop`, after which no vLLM process of this run may be left.
# Prints one line per step with its seconds; any failed step fails the script. Keep a record with
#   bash scripts/record_output.sh results/server/serve_llm_<date>.txt python scripts/bench.py serve_llm
# Needs the CPU vLLM environment and the SmolLM2 model (`atomicrag setup`).
set -euo pipefail
cli="${ATOMICRAG_CLI:-atomicrag}"
root="$(cd "$(dirname "$0")/.." && pwd)"
corpus="$root/atomicrag/datasets/2wikimultihopqa/smoke/corpus.jsonl"
default_question="Which film whose director was born first, No Greater Glory or Seeing'S Believing?"
question="${QUESTION:-$default_question}"
work="$(mktemp -d)"
export ATOMICRAG_STATE_DIR="$work/state"  # this run's server record, apart from the user's
cleanup() { "$cli" -q serve --stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

vllm_procs() { pgrep -fc "vllm.entrypoints.openai.api_server" || true; }
before="$(vllm_procs)"
step() {  # step NAME COMMAND...: run it, print its wall seconds
    local name="$1"; shift
    local t0 t1
    t0="$(date +%s.%N)"
    "$@" > "$work/$name.out" 2>&1 || { echo "$name FAILED:"; tail -20 "$work/$name.out"; exit 1; }
    t1="$(date +%s.%N)"
    awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "%-24s %8.1f s\n", n, b - a }'
}

step index "$cli" -q index "$corpus" --out "$work/index"
step query_cold_own_server "$cli" -q query "$question" --index "$work/index"
[ "$(vllm_procs)" -eq "$before" ] || { echo "the cold query left a vLLM process behind"; exit 1; }
step serve_up "$cli" -q serve
"$cli" -q serve --status > /dev/null || { echo "serve --status: no server after serve"; exit 1; }
up="$(vllm_procs)"
step query_warm_1 "$cli" -q query "$question" --index "$work/index"
step query_warm_2 "$cli" -q query "$question" --index "$work/index"
[ "$(vllm_procs)" -eq "$up" ] || { echo "a warm query started a server of its own"; exit 1; }
step serve_stop "$cli" -q serve --stop
sleep 1
left=$(( $(vllm_procs) - before ))
echo "vLLM processes left after serve --stop: $left"
[ "$left" -eq 0 ] || exit 1
echo "answer (warm): $(tail -3 "$work/query_warm_2.out" | tr '\n' ' ' | cut -c1-200)"
