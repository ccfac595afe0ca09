"""The dataset formats this package reads, by ``dataset.format`` (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import DATASETS

DATASETS.add("normalized", "atomicrag.data.loaders:load_normalized")
DATASETS.add("graphrag_bench", "atomicrag.data.formats:load_graphrag_bench")
DATASETS.add("hipporag", "atomicrag.data.formats:load_hipporag")
DATASETS.add("hf", "atomicrag.data.hf:load_hf")
