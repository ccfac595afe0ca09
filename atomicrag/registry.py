"""Lazy registries: one per pluggable kind (atomizer, retriever, sieve, ...).

How to add an implementation
----------------------------
1. Write a factory ``def build(cfg, **deps) -> Thing`` in the module that owns the kind.
2. Register it by import path, not by object, so that importing atomicrag stays cheap:

       ATOMIZERS.add("sentence", "atomicrag.atomize.sentence:SentenceAtomizer")

3. Add ``conf/<group>/<name>.yaml`` whose ``name:`` field is the registry key.

``Registry.get(name)`` imports the module the first time it is asked for and raises a
``KeyError`` that lists the valid keys when a name is unknown.
"""
from __future__ import annotations

import importlib
from typing import Any


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._paths: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}

    def add(self, name: str, path: str) -> None:
        if ":" not in path:
            raise ValueError(f"{self.kind} registry: path {path!r} must look like 'module:attribute'")
        self._paths[name] = path

    def register(self, name: str, obj: Any) -> None:
        """Register an already-imported object (for user plug-ins)."""
        self._loaded[name] = obj
        self._paths.setdefault(name, f"<object>:{name}")

    def names(self) -> list[str]:
        return sorted(self._paths)

    def __contains__(self, name: str) -> bool:
        return name in self._paths

    def get(self, name: str) -> Any:
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._paths:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        module, attr = self._paths[name].split(":", 1)
        obj = getattr(importlib.import_module(module), attr)
        self._loaded[name] = obj
        return obj


LLMS = Registry("llm")
EMBEDDERS = Registry("embedder")
ATOMIZERS = Registry("atomizer")
RETRIEVERS = Registry("retriever")
DECOMPOSERS = Registry("decompose")
SIEVES = Registry("sieve")
READERS = Registry("reader")
DATASETS = Registry("dataset loader")

ATOMIZERS.add("llm", "atomicrag.atomize.llm:LLMAtomizer")
ATOMIZERS.add("sentence", "atomicrag.atomize.sentence:SentenceAtomizer")
ATOMIZERS.add("vocabulary", "atomicrag.atomize.vocabulary:VocabularyAtomizer")
ATOMIZERS.add("chunk", "atomicrag.atomize.chunk:ChunkAtomizer")
