"""The readers this package provides, by ``reader.name`` (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import LLM, READERS

for _name in ("precise", "abstract", "dataset"):  # dataset = the dataset's own kind (DatasetConfig.reader)
    READERS.add(_name, "atomicrag.answer.readers:LLMReader", needs=LLM)
READERS.add("none", "atomicrag.core.registry:nothing")
