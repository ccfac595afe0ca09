#!/usr/bin/env bash
# Build the device check's wheelhouse: the wheels of scripts/device/device_wheelhouse.txt for the lent GPU
# machine (CPython 3.12, manylinux x86-64; its image has no package index), into .device_wheels/
# (ignored by git; the device tool's `carry` takes it along). A few MiB. scripts/device_check.sh
# installs them there with pip --no-index into a folder put first on PYTHONPATH, beside the image's
# own packages.
#
#   scripts/device/build_device_wheelhouse.sh                 # -> .device_wheels/
#   DRY_RUN=1 scripts/device/build_device_wheelhouse.sh       # print the pip commands only
#   PY_VERSION=3.11 scripts/device/build_device_wheelhouse.sh /tmp/wh   # another interpreter's wheels
#
# A name without a binary wheel on the index (antlr4-python3-runtime) is built here from its sdist
# and kept only if the result is pure Python (py3-none-any): a compiled one would not run there.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-.device_wheels}
PY=${PYTHON:-.venv/bin/python}
PYV=${PY_VERSION:-3.12}
LIST=scripts/device/device_wheelhouse.txt
run() { echo "+ $*"; [ -n "${DRY_RUN:-}" ] || "$@"; }
[ -n "${DRY_RUN:-}" ] || { rm -rf "$DEST.partial"; mkdir -p "$DEST.partial"; }
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  PLATFORMS+=(--platform "$p")
done
grep -v '^\s*#' "$LIST" | sed 's/#.*//; s/\s*$//' | grep -v '^$' | while read -r req; do
  if ! run "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
       "${PLATFORMS[@]}" -d "$DEST.partial" "$req"; then
    echo "no binary wheel of $req for CPython $PYV: building it from the sdist (must be pure Python)"
    run "$PY" -m pip wheel -q --no-deps --no-binary=:all: -w "$DEST.partial" "$req"
  fi
done
[ -n "${DRY_RUN:-}" ] && exit 0
for whl in "$DEST.partial"/*.whl; do
  case "$whl" in
    *-none-any.whl|*-cp${PYV/./}-*.whl|*-abi3-*.whl) ;;
    *) echo "error: $whl is not for CPython $PYV (expected none-any, cp${PYV/./} or abi3)" >&2; exit 1 ;;
  esac
done
n_req=$(grep -v '^\s*#' "$LIST" | sed 's/#.*//' | grep -c '[^ ]')
n_whl=$(ls "$DEST.partial"/*.whl | wc -l)
[ "$n_req" = "$n_whl" ] || { echo "error: $n_whl wheels for $n_req requirements in $LIST" >&2; exit 1; }
(cd "$DEST.partial" && sha256sum ./*.whl > SHA256SUMS)
rm -rf "$DEST"; mv "$DEST.partial" "$DEST"  # whole or not at all
echo "wheelhouse $DEST: $n_whl wheels, $(du -sh "$DEST" | cut -f1)"
