"""A transformers encoder run by ONNX Runtime on CPU (``embedder.name=onnx``).

Same numbers as ``TransformersEmbedder`` (fp32 throughout, cosine to the torch output
>= 0.9999), faster per token on small CPUs: indexing the 2Wiki corpus is dominated by encoding
short texts, and ONNX Runtime's fused graph (attention, LayerNorm, GELU) spends less per token
than eager torch in fp32 (the ``probe`` lines of
``results/benchmarks/indexing_2wiki_onnx_fp32_20261204.txt``, all-MiniLM-L6-v2; ``benchmarks/indexing.py``).

The model is exported once with ``torch.onnx.export`` (TorchScript exporter; no network) into
``$ATOMICRAG_ONNX_DIR`` (default ``~/.cache/atomicrag/onnx``) under a key of the model id, its
weight files' names and sizes, the torch version and the opset, then reused. The export is
written to a temporary file and renamed, so an interrupted export never leaves a broken model.
Only files this code wrote are loaded, and ONNX files hold no executable pickles.

There are no dynamic int8 weights: int8 moves the embeddings far more than bf16 does, and the
synonym edges (cosine >= the synonym threshold) are sensitive to small shifts, for a small
saving of embedding time.
"""
from __future__ import annotations

import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from atomicrag.core import progress
from atomicrag.core.artifacts import content_hash
from atomicrag.embed.encoders import (
    _Encoder,
    _model_pooling,
    clamp_max_length,
    padded,
    pool,
    tokenized,
)

log = logging.getLogger(__name__)

OPSET = 17


def onnx_dir() -> Path:
    return Path(os.environ.get("ATOMICRAG_ONNX_DIR", "~/.cache/atomicrag/onnx")).expanduser()


def _weights_fingerprint(path: str) -> list[tuple[str, int]]:
    folder = Path(path)
    if not folder.is_dir():
        return []
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                  if p.suffix in (".safetensors", ".bin", ".json") and p.is_file())


class _HiddenStates(torch.nn.Module):
    """Positional inputs -> last hidden state ``[b, t, d]``: what the exporter traces."""

    def __init__(self, model: torch.nn.Module, names: list[str]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs))).last_hidden_state


def export_onnx(path: str, model_id: str, local_only: bool, tokenizer: Any, target: Path) -> None:
    """Export the encoder at ``path`` to ``target`` (atomic: temp file, then rename)."""
    from transformers import AutoModel

    with progress.no_loading_bars():
        model = AutoModel.from_pretrained(path, local_files_only=local_only).float().train(False)
    names = [n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask", "token_type_ids")]
    sample = tokenizer(["an example sentence to trace", "short"], padding=True, return_tensors="pt")
    args = tuple(sample[n] for n in names)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter announces its deprecation
            torch.onnx.export(
                _HiddenStates(model, names), args, tmp, input_names=names, output_names=["hidden"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]},
                opset_version=OPSET, dynamo=False,
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("exported %s to %s", model_id, target)


class OnnxEmbedder(_Encoder):
    """Tokenise with the model's tokenizer, run the exported graph, pool and normalise in numpy."""

    kind = "ort"

    def __init__(self, model: str, *, threads: int | None = None, **kwargs: Any) -> None:
        kwargs["fp16"] = False  # CPU inference in fp32: the point is identical numbers
        if kwargs.get("precision", "auto") not in ("auto", "fp32"):
            raise ValueError(f"embedder name 'onnx' runs fp32 only, not precision={kwargs['precision']!r}; "
                             "use sentence_transformers or transformers for bf16/fp16")
        kwargs["precision"] = "fp32"
        kwargs["device"] = "cpu"
        super().__init__(model, **kwargs)
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ImportError("embedder name 'onnx' needs ONNX Runtime: pip install onnxruntime onnx") from exc
        from transformers import AutoConfig, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=self.local_only)
        config = AutoConfig.from_pretrained(self.path, local_files_only=self.local_only)
        self.dim = int(config.hidden_size)
        if self.pooling == "auto":
            self.pooling = _model_pooling(self.path, self.local_only)
        self.max_length = clamp_max_length(self.tokenizer, self.max_length,
                                           getattr(config, "max_position_embeddings", None))
        key = content_hash([self.model_id, _weights_fingerprint(self.path), torch.__version__, OPSET], length=16)
        self.onnx_path = onnx_dir() / f"{self.model_id.replace('/', '__')}-{key}.onnx"
        if not self.onnx_path.is_file():
            export_onnx(self.path, self.model_id, self.local_only, self.tokenizer, self.onnx_path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or torch.get_num_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(self.onnx_path), opts, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        texts = self._prefixed(texts, is_query)
        out = torch.empty(len(texts), self.dim)
        ids = tokenized(self.tokenizer, texts, self.max_length)  # once; each batch pads its slice
        lengths = [len(x) for x in ids["input_ids"]] if ids else []
        for idx in self._batches(lengths):
            batch = padded(self.tokenizer, ids, self._rows(idx, lengths), "np")
            hidden = self.session.run(None, {n: batch[n].astype(np.int64) for n in self.input_names})[0]  # [rows, t, d]
            mask = torch.from_numpy(batch["attention_mask"])  # [rows, t]
            out[torch.tensor(idx)] = pool(torch.from_numpy(hidden), mask, self.pooling, self.normalize)[: len(idx)]
            progress.advance("text", len(idx))
        return out
