"""Data: loaders (files → ``Dataset`` of ``Passage``/``Question``) and the token-window chunker."""
from ..registry import DATASETS
from .chunker import Chunker, chunk_passages
from .loaders import Dataset, load_dataset
from .validate import DataError

# every format goes through load_dataset(cfg, data_dir), which dispatches on cfg.format
for _fmt in ("normalized", "graphrag_bench", "hipporag", "hf"):
    DATASETS.add(_fmt, "atomicrag.data.loaders:load_dataset")

__all__ = ["Chunker", "DataError", "Dataset", "chunk_passages", "load_dataset"]
