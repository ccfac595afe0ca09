"""Data: loaders (files → ``Dataset`` of ``Passage``/``Question``) and the token-window chunker."""
from atomicrag.data.loaders import Dataset, load_dataset
from atomicrag.data.token_windows import Chunker, chunk_passages
from atomicrag.data.validate import DataError

__all__ = ["Chunker", "DataError", "Dataset", "chunk_passages", "load_dataset"]
