"""Data: loaders (files → ``Dataset`` of ``Passage``/``Question``) and the token-window chunker."""
from .chunker import Chunker, chunk_passages
from .loaders import Dataset, load_dataset
from .validate import DataError

__all__ = ["Chunker", "DataError", "Dataset", "chunk_passages", "load_dataset"]
