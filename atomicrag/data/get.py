"""What ``atomicrag data get DATASET [--from DIR] [--out DIR]`` runs: one call from nothing to a dataset
(the command itself: ``atomicrag.library.data_cmd``).

Without ``--from`` the pinned source files are downloaded (resumable, checked) into
``<out>/.sources/``; with ``--from DIR`` they are taken from a folder the user already has: a copy of
the AtomicRAG repository (or of its ``dataset/`` folder), HippoRAG's ``reproduce/dataset`` files,
GraphRAG-Bench's ``Datas`` folder, or all of them side by side. The normalised layout is then built
into ``<out>/<dataset>/`` (``atomicrag.data.build``) and checked by loading it back.
"""
from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atomicrag.data import build
from atomicrag.data.fetch import SourceError, gather
from atomicrag.data.sources import NOVELS, SourceFile, source


@dataclass(frozen=True)
class DatasetSpec:
    required: tuple[SourceFile, ...]
    optional: tuple[SourceFile, ...]
    builder: Callable[[dict[str, Path], Path], dict[str, Any]]
    licence: str
    splits: tuple[str, ...] = ("smoke", "dev", "heldout", "all")


def _a(path: str) -> SourceFile:
    return source("atomicrag", path)


SPECS: dict[str, DatasetSpec] = {
    "graphbench_medical": DatasetSpec(
        required=(_a("dataset/medical/Medical/chunks.json"), _a("dataset/medical/Medical/questions.json")),
        optional=(_a("datasets/atomicrag/abstract_qa/Questions/medical_questions.parquet"),
                  source("graphrag_bench", "Datas/Corpus/medical.json"),
                  source("graphrag_bench", "Datas/Questions/medical_questions.json")),
        builder=build.build_medical,
        licence="GraphRAG-Bench (no licence stated; the Medical text is NCCN patient-guideline material: check "
                "its terms before redistributing beyond research use); AtomicRAG's chunks and revised questions: MIT"),
    "graphbench_novel": DatasetSpec(
        required=tuple(_a(f"dataset/novel/{n}/{f}") for n in NOVELS for f in ("chunks.json", "questions.json")),
        optional=(_a("datasets/atomicrag/abstract_qa/Questions/novel_questions.parquet"),
                  _a("datasets/atomicrag/abstract_qa/Corpus/novel.parquet")),
        builder=build.build_novel,
        licence="GraphRAG-Bench (no licence stated; the novels are Project Gutenberg texts); AtomicRAG's chunks "
                "and revised questions: MIT"),
    "2wikimultihopqa": DatasetSpec(
        required=(source("hipporag", "reproduce/dataset/2wikimultihopqa_corpus.json"),
                  _a("dataset/2wikimultihop/2WikiMultiHop/questions.json")),
        optional=(_a("dataset/2wikimultihop/2WikiMultiHop/chunks.json"),),
        builder=build.build_2wiki,
        licence="2WikiMultiHopQA: Apache-2.0 (per its authors); HippoRAG's corpus file: MIT; AtomicRAG's "
                "questions and chunks: MIT"),
    "musique": DatasetSpec(
        required=(_a("dataset/musique/Musique/questions.json"),),
        optional=(source("hipporag", "reproduce/dataset/musique_corpus.json"),
                  source("hipporag", "reproduce/dataset/musique.json")),
        builder=build.build_musique,
        licence="MuSiQue: CC BY 4.0 (per its authors); HippoRAG's files: MIT; AtomicRAG's questions: MIT",
        splits=("dev", "heldout", "all")),
    "hotpotqa": DatasetSpec(
        required=(source("hipporag", "reproduce/dataset/hotpotqa.json"),
                  source("hipporag", "reproduce/dataset/hotpotqa_corpus.json")),
        optional=(),
        builder=build.build_hotpotqa,
        licence="HotpotQA: CC BY-SA 4.0 (per its authors); HippoRAG's files: MIT",
        splits=("dev", "heldout", "all")),
}


def get_dataset(name: str, *, out_dir: Path, source_dir: Path | None = None, progress: bool = True,
                strict: bool = False) -> dict[str, Any]:
    """Build ``out_dir/name`` from the pinned sources (downloaded, or found under ``source_dir``).

    Returns the build summary; raises ``SourceError`` (names the URL or the paths looked at) when a
    required source cannot be had, and ``DataError`` when a source file is malformed.
    """
    if name not in SPECS:
        raise ValueError(f"unknown dataset {name!r}; `atomicrag data get` knows: {', '.join(SPECS)}")
    spec = SPECS[name]
    out = out_dir / name
    if out.exists() and not (out / "sources.json").is_file():
        raise FileExistsError(f"{out} exists and was not written by `atomicrag data get` (no sources.json); "
                              "move it away or pass another --out")
    print(f"{name}: licence: {spec.licence}", file=sys.stderr)
    required = spec.required
    if name == "graphbench_novel" and source_dir is not None:
        required = _novels_present(source_dir, spec.required)
    mismatched: list[str] = []
    files = gather(required, optional=spec.optional, source_dir=source_dir, cache_dir=out_dir / ".sources",
                   progress=progress, strict=strict, mismatched=mismatched)
    # built beside the target and swapped in whole: an interrupted or failed build leaves the old
    # folder as it was, and a rebuild leaves no stale file of an earlier one
    partial = out_dir / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        summary = spec.builder(files, partial)
        build.write_sources(partial, files, mismatched, spec.licence)
        _check_loads(name, partial, spec.splits)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    old = out_dir / f".{name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    partial.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    summary["not_pinned"] = mismatched
    return summary


def _novels_present(source_dir: Path, files: tuple[SourceFile, ...]) -> tuple[SourceFile, ...]:
    """The novels of ``files`` whose questions are under ``source_dir`` (a user may hold some of the 20;
    each novel is its own corpus, so a subset is a valid dataset); none at all is an error."""
    from atomicrag.data.fetch import locate

    have = {f.path.split("/")[2] for f in files if f.path.endswith("questions.json") and locate(source_dir, f)}
    if not have:
        raise SourceError(f"no Graph-Bench novel under {source_dir}: expected dataset/novel/<Novel-N>/questions.json "
                          f"and chunks.json for some of {', '.join(NOVELS)}")
    missing = sorted(set(NOVELS) - have)
    if missing:
        print(f"atomicrag: warning: {len(missing)} of {len(NOVELS)} novels are not in {source_dir}; building the "
              f"{len(have)} found ({', '.join(sorted(have))})", file=sys.stderr)
    return tuple(f for f in files if f.path.split("/")[2] in have)


def _check_loads(name: str, folder: Path, splits: tuple[str, ...]) -> None:
    """Load every split back with the project's strict loader: what was written is what a run reads."""
    from atomicrag.core.config import DatasetConfig
    from atomicrag.data.loaders import load_dataset

    for split in splits:
        load_dataset(DatasetConfig(name=name, split=split, path=str(folder)), folder.parent, require_corpus=False)
