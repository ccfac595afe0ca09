#!/usr/bin/env bash
# Run a benchmark command and keep what it prints as a text record, headed by what made it:
# the command, the commit (and whether the tree was dirty), the machine, the load average, and
# start/end times; the command's exit status ends the file and is this script's own.
#
#   bash scripts/record_output.sh results/benchmarks/graph_stats_20261204.txt \
#       .venv/bin/python scripts/bench.py triangles
#
# The record is written next to its final name and moved there only when the command succeeded,
# so a failed or interrupted run never leaves a record that looks complete.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 RECORD.txt COMMAND [ARGS...]" >&2
    exit 2
fi
out="$1"; shift
mkdir -p "$(dirname "$out")"
tmp="$out.partial"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (dirty tree)"; fi
cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
bf16="no"; grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null && bf16="yes"
{
    printf '# command:'; printf ' %q' "$@"; echo
    echo "# commit: $commit"
    echo "# machine: $(nproc) cores, ${cpu:-unknown CPU}, AVX512-BF16: $bf16, $(free -g | awk '/Mem:/{print $2}') GiB"
    echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$tmp"
"$@" >> "$tmp" 2>&1
rc=$?
{
    echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# finished: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# exit status: $rc"
} >> "$tmp"
if [ "$rc" -eq 0 ]; then
    mv "$tmp" "$out"
    echo "record: $out"
else
    echo "command failed (exit $rc); its output is kept in $tmp, no record written" >&2
fi
exit "$rc"
