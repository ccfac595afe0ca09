"""embedder.precision: automatic choice by hardware, names that key the cache, and the cosine
bound of bf16 MiniLM to fp32 on real corpus sentences."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from atomicrag.core import hardware as prec
from atomicrag.core.config import EmbedderConfig
from tests.marks import MINILM, needs


def test_cpuinfo_flags_decide_native_bf16(tmp_path: Path) -> None:
    with_bf16 = tmp_path / "a"
    with_bf16.write_text("processor: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n")
    without = tmp_path / "b"
    without.write_text("processor: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n")
    amx = tmp_path / "c"
    amx.write_text("flags : fpu amx_tile amx_bf16\n")
    prec.cpu_has_native_bf16.cache_clear()
    try:
        assert prec.cpu_has_native_bf16(str(with_bf16)) and prec.cpu_has_native_bf16(str(amx))
        assert not prec.cpu_has_native_bf16(str(without))
    finally:
        prec.cpu_has_native_bf16.cache_clear()


def test_auto_precision_can_be_forced_for_a_whole_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """ATOMICRAG_AUTO_PRECISION=bf16 gives any CPU what `auto` picks on one with native bf16."""
    monkeypatch.setattr(prec, "cpu_has_native_bf16", lambda: False)
    monkeypatch.setenv("ATOMICRAG_AUTO_PRECISION", "bf16")
    assert prec.resolve_precision("auto", "cpu") == "bf16"
    assert prec.resolve_precision("fp32", "cpu") == "fp32"  # an explicit setting is never overridden
    assert prec.resolve_precision("auto", "cuda") == "fp16"  # CUDA keeps its own choice
    monkeypatch.setattr(prec, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setenv("ATOMICRAG_AUTO_PRECISION", "fp32")
    assert prec.resolve_precision("auto", "cpu") == "fp32"
    monkeypatch.setenv("ATOMICRAG_AUTO_PRECISION", "int8")
    with pytest.raises(ValueError, match="ATOMICRAG_AUTO_PRECISION"):
        prec.resolve_precision("auto", "cpu")


def test_auto_precision_by_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATOMICRAG_AUTO_PRECISION", raising=False)
    monkeypatch.setattr(prec, "cpu_has_native_bf16", lambda: True)
    assert prec.resolve_precision("auto", "cpu") == "bf16"
    assert prec.resolve_precision("auto", "cuda") == "fp16"
    assert prec.resolve_precision("auto", "cuda", fp16=False) == "fp32"
    assert prec.resolve_precision("fp32", "cpu") == "fp32"  # the override wins
    monkeypatch.setattr(prec, "cpu_has_native_bf16", lambda: False)
    assert prec.resolve_precision("auto", "cpu") == "fp32"  # emulated bf16 is slower: never automatic
    assert prec.resolve_precision("bf16", "cpu") == "bf16"  # but allowed when asked for
    with pytest.raises(ValueError, match="precision"):
        prec.resolve_precision("int8", "cpu")
    with pytest.raises(ValueError, match="precision"):
        EmbedderConfig(precision="half")


needs_minilm = needs(MINILM, "transformers")


def corpus_sentences(n: int) -> list[str]:
    path = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "2wikimultihopqa" / "corpus.jsonl"
    if not path.is_file():
        return ["No Greater Glory is a 1934 film directed by Frank Borzage.", "Warsaw is the capital of Poland.",
                "The stock market fell sharply after the bank raised interest rates."] * (n // 3)
    out: list[str] = []
    with path.open() as f:
        for line in f:
            out += [t for t in json.loads(line)["text"].split(". ") if len(t) > 15]
            if len(out) >= n:
                break
    return out[:n]


@pytest.mark.slow
@needs_minilm
@pytest.mark.parametrize("kind", ["transformers", "sentence_transformers"])
def test_bf16_minilm_stays_within_cosine_bound(kind: str) -> None:
    from atomicrag.embed import build_embedder

    if kind == "sentence_transformers" and importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers not installed")
    texts = corpus_sentences(300)
    base = {"name": kind, "model": "minilm", "device": "cpu"}
    fp32 = build_embedder(EmbedderConfig(**base, precision="fp32"))
    bf16 = build_embedder(EmbedderConfig(**base, precision="bf16"))
    a, b = fp32.encode(texts), bf16.encode(texts)
    assert b.dtype == torch.float32 and b.shape == a.shape
    cos = (a * b).sum(1)
    assert float(cos.min()) >= 0.999, f"min cosine {float(cos.min()):.5f}"
    # the precision keys the embedding cache: bf16 vectors are never served for fp32
    assert bf16.name != fp32.name and bf16.name.endswith("|bf16-fixed") and "bf16" not in fp32.name



def test_embedding_cache_is_keyed_by_precision(tmp_path: Path) -> None:
    from atomicrag.embed.cache import embed_cached

    class Enc:
        dim = 4

        def __init__(self, name: str, value: float) -> None:
            self.name, self.value, self.calls = name, value, 0

        def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
            self.calls += 1
            return torch.full((len(texts), 4), self.value)

    fp32, bf16 = Enc("st|m|len=256", 1.0), Enc("st|m|len=256|bf16", 2.0)
    path = tmp_path / "emb.safetensors"
    assert float(embed_cached(fp32, ["a", "b"], path)[0, 0]) == 1.0
    assert float(embed_cached(bf16, ["a", "b"], path)[0, 0]) == 2.0 and bf16.calls == 1  # not served fp32's


@needs("onnxruntime", MINILM)
def test_onnx_refuses_reduced_precision() -> None:
    from atomicrag.embed.onnx_encoder import OnnxEmbedder

    with pytest.raises(ValueError, match="fp32 only"):
        OnnxEmbedder("minilm", precision="bf16")
