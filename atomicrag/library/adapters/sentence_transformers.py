"""A sentence-transformers model (a Hugging Face id or a local folder) as an atomicrag embedder.

``SentenceTransformerEmbedding("minilm")`` is the offline all-MiniLM-L6-v2 package;
``SentenceTransformerEmbedding("BAAI/bge-large-en-v1.5", pooling="cls",
query_prefix="Represent this sentence for searching relevant passages: ")`` is the paper's
encoder. The same class backs ``embedder.name=sentence_transformers`` in configs; this name is
here so the library reads like the other AtomicRAG library's ``HuggingFaceEmbedding``.
"""
from __future__ import annotations

from atomicrag.engine.api import SentenceTransformerEmbedder


class SentenceTransformerEmbedding(SentenceTransformerEmbedder):
    def __init__(self, model_name_or_path: str = "minilm", *, pooling: str = "auto", normalize: bool = True,
                 query_prefix: str = "", passage_prefix: str = "", max_length: int = 256, batch_size: int = 64,
                 fp16: bool = True, device: str = "auto", precision: str = "auto",
                 trust_remote_code: bool = False) -> None:
        super().__init__(model_name_or_path, pooling=pooling, normalize=normalize, query_prefix=query_prefix,
                         passage_prefix=passage_prefix, max_length=max_length, batch_size=batch_size,
                         fp16=fp16, device=device, precision=precision,
                         trust_remote_code=trust_remote_code)
