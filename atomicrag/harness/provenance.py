"""How a record was made: the one helper every record writer (harness runs, benchmark scripts) uses.

    prov = Provenance.start()                       # at the top of the run: argv and start time
    ...                                             # the run
    record["provenance"] = prov.finish(cfg, data_files=data.files, uses_llm=True)

``finish`` returns a JSON-ready dict: the full command (argv and a shell-quoted line), the composed
config (every field, resolved), the git commit and whether the work tree had uncommitted changes,
the model names and a sha256 of each model file that exists on this machine, a sha256 of each data
file the run read, the machine (CPU model, cores, native bf16, torch and Python versions) and the
start and end times. A record carrying it can be re-made, or shown to differ, without guessing.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# weight files of a model folder: their hashes identify the model (configs and tokenizers rarely differ)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".gguf", ".pt", ".pth")
_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: one read per process


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (memoised per process while its size and mtime stay the same)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with p.open("rb") as f:
            while block := f.read(1 << 22):
                h.update(block)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def files_record(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """``{path: {"sha256", "bytes"}}`` of each existing file; a folder stands for its weight files."""
    out: dict[str, dict[str, Any]] = {}
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix in WEIGHT_SUFFIXES:
                    out[str(f)] = {"sha256": file_sha256(f), "bytes": f.stat().st_size}
        elif p.is_file():
            out[str(p)] = {"sha256": file_sha256(p), "bytes": p.stat().st_size}
        else:
            raise FileNotFoundError(f"provenance: {p} was named as a file the run read, but it does not exist")
    return out


def git_state(where: str | Path | None = None) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the checkout holding ``where`` (this package by default);
    commit None when it is not a git checkout (an installed wheel)."""
    here = Path(where) if where is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=here, check=False).stdout.strip()
        if not commit:
            return {"commit": None, "dirty": None}
        # tracked files outside results/ only: a cache, or a committed record being rewritten by
        # the command that made it, is not a code change
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ":(top)", ":(top,exclude)results"], capture_output=True,
                               text=True, timeout=5, cwd=here, check=False).stdout.strip()
        return {"commit": commit, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the numbers ran on: timings and bf16 results depend on it."""
    import torch

    from atomicrag.core.hardware import cpu_has_native_bf16

    out: dict[str, Any] = {
        "cpu": cpu_model(), "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "native_bf16": cpu_has_native_bf16(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "python": sys.version.split()[0], "platform": platform.platform(),
    }
    if hasattr(os, "getloadavg"):  # a loaded machine explains slow timings
        out["load_1min"] = round(os.getloadavg()[0], 2)
    return out


def config_dict(cfg: Any) -> Any:
    """The composed config as plain JSON values (a dataclass, a mapping, or None)."""
    if cfg is None:
        return None
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return _jsonable(dataclasses.asdict(cfg))
    return _jsonable(cfg)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def model_record(cfg: Any, uses_llm: bool, uses_embedder: bool = True) -> dict[str, Any]:
    """Model names of ``cfg`` and the sha256 of each model file that exists here.

    Names come from the config; files from the same resolvers the factories use (the offline
    MiniLM package, a local folder or file, the offline GGUF aliases). A hub id with no local file
    has no hash (its name is the record); an LLM the run did not use is left out."""
    out: dict[str, Any] = {}
    if uses_embedder and getattr(cfg, "embedder", None) is not None:
        emb = cfg.embedder
        rec: dict[str, Any] = {"name": emb.name, "model": emb.model, "precision": emb.precision}
        if emb.name != "fake":
            rec["files"] = files_record(_embedder_paths(emb.model))
        out["embedder"] = rec
    if uses_llm and getattr(cfg, "llm", None) is not None:
        llm = cfg.llm
        rec = {"name": llm.name, "model": llm.model, "model_path": llm.model_path}
        if llm.name != "fake" and llm.model_path:
            rec["files"] = files_record(_llm_paths(llm.model_path, getattr(cfg.paths, "cache_dir", "cache")))
        out["llm"] = rec
    return out


def _embedder_paths(model: str) -> list[Path]:
    if model == "minilm":
        from atomicrag.core.offline_models import offline_minilm_path

        try:
            return [Path(offline_minilm_path())]
        except ImportError:
            return []
    p = Path(model).expanduser()
    return [p] if p.exists() else []  # a hub id: the name is all there is


def _llm_paths(model_path: str, cache_dir: str) -> list[Path]:
    from atomicrag.core.offline_models import ALIASES, OfflineModelError, resolve_model_path

    if model_path.lower() in {a.lower() for a in ALIASES}:
        try:  # the run resolved it already: this finds the same file (a built GGUF is not rebuilt)
            return [resolve_model_path(model_path, cache_dir)]
        except OfflineModelError:
            return []
    p = Path(model_path).expanduser()
    return [p] if p.exists() else []


@dataclass
class Provenance:
    """A run's start (argv, time, commit) and, at ``finish``, everything else about how it was made."""

    argv: list[str]
    started_at: str
    git: dict[str, Any]
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    @classmethod
    def start(cls, argv: list[str] | None = None) -> Provenance:
        # the commit is read at the start: the code that ran, even if the tree changes meanwhile
        return cls(argv=list(sys.argv if argv is None else argv), started_at=_now(), git=git_state())

    def finish(self, cfg: Any = None, *, data_files: Iterable[str | Path] = (), uses_llm: bool = False,
               uses_embedder: bool = True, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The provenance record. ``data_files``: every data file the run read (hashed);
        ``uses_llm``/``uses_embedder``: which of ``cfg``'s models the run used (their files hashed);
        ``extra``: facts the config does not hold (e.g. a benchmark's question selection)."""
        argv = [sys.executable if i == 0 and a == sys.executable else a for i, a in enumerate(self.argv)]
        record = {
            "command": shlex.join(["python", *argv]) if argv and argv[0].endswith(".py") else shlex.join(argv),
            "argv": argv, "cwd": os.getcwd(),
            "git": self.git,
            "config": config_dict(cfg),
            "models": model_record(cfg, uses_llm, uses_embedder) if cfg is not None else {},
            "data_files": files_record(data_files),
            "machine": machine(),
            "started_at": self.started_at, "finished_at": _now(),
            "wall_seconds": round(time.perf_counter() - self._t0, 1),
        }
        if extra:
            record["extra"] = _jsonable(extra)
        return record


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
