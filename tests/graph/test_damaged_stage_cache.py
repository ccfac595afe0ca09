"""A damaged stage cache (atomize or graph folder under paths.cache_dir) is moved aside with a
warning that names it, and the stage is rebuilt: the run gives the same graph, never a bare error."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from atomicrag.core.config import Config
from atomicrag.graph.cached_build import index_corpus

from .helpers import CHUNKS, VECTORS, CountingAtomizer, TableEmbedder


def _index(root: Path, at: CountingAtomizer):
    return index_corpus(CHUNKS, Config(), None, TableEmbedder(VECTORS), root, "toy", atomizer=at, progress=False)


def _damage_every_file(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file() and f.name != "manifest.json":
            f.write_bytes(b"\x00garbage")


@pytest.mark.parametrize("stage", ["atomize", "graph"])
def test_a_damaged_stage_folder_is_moved_aside_and_rebuilt(tmp_path: Path, caplog, stage: str) -> None:
    at = CountingAtomizer()
    g1 = _index(tmp_path, at)
    (folder,) = (tmp_path / "toy" / stage).iterdir()
    _damage_every_file(folder)
    with caplog.at_level("WARNING", logger="atomicrag"):
        g2 = _index(tmp_path, at)
    moved = list((tmp_path / "toy" / stage).glob(f"{folder.name}.damaged-*"))
    assert len(moved) == 1, list((tmp_path / "toy" / stage).iterdir())
    assert f"the {stage} stage cache {folder}" in caplog.text and "paths.cache_dir" in caplog.text
    assert str(moved[0]) in caplog.text
    assert at.calls == (2 if stage == "atomize" else 1)  # only the damaged stage is redone
    assert g2.entity_keys == g1.entity_keys and torch.equal(g2.adjacency.to_dense(), g1.adjacency.to_dense())
    caplog.clear()
    _index(tmp_path, at)  # the rebuilt folder is a plain cache hit again
    assert "damaged" not in caplog.text and at.calls == (2 if stage == "atomize" else 1)


def test_a_garbage_manifest_is_damage_too(tmp_path: Path, caplog) -> None:
    at = CountingAtomizer()
    _index(tmp_path, at)
    (folder,) = (tmp_path / "toy" / "graph").iterdir()
    (folder / "manifest.json").write_text("{not json")
    with caplog.at_level("WARNING", logger="atomicrag"):
        _index(tmp_path, at)
    assert "graph stage cache" in caplog.text and "JSONDecodeError" in caplog.text
    assert (folder / "manifest.json").is_file()  # rebuilt
