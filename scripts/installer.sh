#!/usr/bin/env bash
# Sourced by scripts/setup_env.sh and scripts/setup_vllm_env.sh: one `pkg_install VENV ARGS...`
# that installs with uv (fast: parallel downloads, no per-file Python overhead) and falls back to
# pip when uv cannot be had.
#
#   INSTALLER=uv   (default) install uv from PyPI into each environment, then `uv pip install`
#   INSTALLER=pip  plain pip, as before
#
# uv does not read pip's configuration, so the find-links, index URLs and constraint files pip is
# configured with on this machine (pip.conf, PIP_* variables) are passed on to uv explicitly: the
# CPU torch wheel, for one, resolves only from a local find-links folder on some machines.
INSTALLER="${INSTALLER:-uv}"
export UV_LINK_MODE="${UV_LINK_MODE:-copy}"  # the cache and the venv often sit on different disks

_uv_args=()
_uv_args_for() {  # the uv flags that mirror pip's configuration, read with VENV's pip
  _uv_args=(--index-strategy unsafe-best-match)  # pip's behaviour: best version over all indexes
  local line key value v
  while IFS= read -r line; do
    key="${line%%=*}"; key="${key##*.}"
    value="${line#*=}"; value="${value#\'}"; value="${value%\'}"
    for v in $value; do
      case "$key" in
        find-links) _uv_args+=(--find-links "$v") ;;
        extra-index-url) _uv_args+=(--extra-index-url "$v") ;;
        index-url) _uv_args+=(--index-url "$v") ;;
        constraint) [ -f "$v" ] && _uv_args+=(--constraint "$v") ;;
        cert) [ -z "${SSL_CERT_FILE:-}" ] && [ -f "$v" ] && export SSL_CERT_FILE="$v" ;;
      esac
    done
  done < <("$1/bin/python" -m pip config list 2>/dev/null | sort -u)
  return 0
}

# ensure_uv VENV: uv inside VENV (a wheel from PyPI, ~20 MB), or INSTALLER=pip when that fails
ensure_uv() {
  [ "$INSTALLER" = "uv" ] || return 0
  if [ ! -x "$1/bin/uv" ] && ! "$1/bin/python" -m pip install -q "uv>=0.5"; then
    echo "[setup] could not install uv; falling back to pip" >&2
    INSTALLER=pip
    return 0
  fi
  _uv_args_for "$1"
  echo "[setup] installing with $("$1/bin/uv" --version)"
}

# pkg_install VENV ARGS...: pip-style install arguments (requirements, -e ., --no-deps)
pkg_install() {
  local venv="$1"; shift
  if [ "$INSTALLER" = "uv" ]; then
    "$venv/bin/uv" pip install -q --python "$venv/bin/python" "${_uv_args[@]}" "$@"
  else
    "$venv/bin/python" -m pip install -q "$@"
  fi
}

pkg_uninstall() {
  local venv="$1"; shift
  if [ "$INSTALLER" = "uv" ]; then
    "$venv/bin/uv" pip uninstall -q --python "$venv/bin/python" "$@"
  else
    "$venv/bin/python" -m pip uninstall -q -y "$@"
  fi
}
