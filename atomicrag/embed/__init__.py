"""Text encoders (fake, sentence-transformers, transformers, ONNX Runtime), vector indexes and the embedding cache.

Heavy libraries (sentence-transformers, transformers, faiss) load only when an embedder or an
index of that kind is built.
"""
from .cache import embed_cached
from .factory import build_embedder
from .fake import FakeEmbedder
from .index import FaissIndex, TorchExactIndex, VectorIndex, build_index
from .protocol import Embedder

__all__ = [
    "Embedder", "FaissIndex", "FakeEmbedder", "TorchExactIndex", "VectorIndex",
    "build_embedder", "build_index", "embed_cached",
]
