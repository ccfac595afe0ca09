"""Text encoders (fake, sentence-transformers, transformers, ONNX Runtime), vector indexes and the embedding cache.

Heavy libraries (sentence-transformers, transformers, faiss) load only when an embedder or an
index of that kind is built.
"""
from atomicrag.embed.cache import embed_cached
from atomicrag.embed.factory import build_embedder
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.embed.protocol import Embedder
from atomicrag.embed.vector_index import FaissIndex, TorchExactIndex, VectorIndex, build_index

__all__ = [
    "Embedder", "FaissIndex", "FakeEmbedder", "TorchExactIndex", "VectorIndex",
    "build_embedder", "build_index", "embed_cached",
]
