"""The embedding cache: re-runs embed nothing, new texts only what is new, files are safetensors."""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from atomicrag.embed import FakeEmbedder, embed_cached


class Counting(FakeEmbedder):
    def __init__(self, dim: int = 16) -> None:
        super().__init__(dim)
        self.seen: list[str] = []

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        self.seen.extend(texts)
        vecs = super().encode(texts)
        return -vecs if is_query else vecs  # distinguishable sides


def test_second_run_embeds_nothing_and_new_texts_only_once(tmp_path: Path) -> None:
    path = tmp_path / "emb" / "atoms.safetensors"
    emb = Counting()
    texts = ["alpha", "beta", "alpha", "gamma"]
    first = embed_cached(emb, texts, path)
    assert sorted(emb.seen) == ["alpha", "beta", "gamma"]  # duplicates embedded once
    assert torch.equal(first, FakeEmbedder(16).encode(texts))
    emb.seen.clear()
    again = embed_cached(emb, list(reversed(texts)), path)
    assert emb.seen == [] and torch.equal(again, first.flip(0))
    more = embed_cached(emb, ["delta", "beta"], path, save_every=1)
    assert emb.seen == ["delta"] and torch.equal(more[1], first[1])
    stored = load_file(str(path))
    assert stored["keys"].shape == (4, 16) and stored["vectors"].shape == (4, 16)
    assert not list(path.parent.glob("*.tmp"))  # atomic writes leave no temp files


def test_query_side_and_other_embedders_do_not_collide(tmp_path: Path) -> None:
    path = tmp_path / "c.safetensors"
    emb = Counting()
    p = embed_cached(emb, ["x"], path)
    q = embed_cached(emb, ["x"], path, is_query=True)
    assert torch.equal(q, -p)
    other = FakeEmbedder(8)  # another name and dim: the old file is not reused
    assert embed_cached(other, ["x"], path).shape == (1, 8)


def test_corrupt_cache_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "c.safetensors"
    path.write_bytes(b"not a safetensors file")
    out = embed_cached(FakeEmbedder(16), ["a", "b"], path)
    assert out.shape == (2, 16) and load_file(str(path))["vectors"].shape == (2, 16)
    assert embed_cached(FakeEmbedder(16), [], path).shape == (0, 16)


def test_damaged_cache_is_moved_aside_with_a_warning_naming_it(tmp_path: Path, caplog) -> None:
    path = tmp_path / "c.safetensors"
    good = embed_cached(FakeEmbedder(16), ["a", "b", "c"], path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a half-written file
    with caplog.at_level("WARNING", logger="atomicrag"):
        again = embed_cached(FakeEmbedder(16), ["a", "b", "c"], path)
    assert torch.equal(again, good)  # rebuilt: the same vectors
    moved = list(tmp_path.glob("c.safetensors.damaged-*"))
    assert len(moved) == 1 and moved[0].read_bytes() == data[: len(data) // 2]  # kept for a look
    assert str(path) in caplog.text and "paths.cache_dir" in caplog.text and str(moved[0]) in caplog.text
