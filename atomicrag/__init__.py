"""atomicrag: Atom-Entity Graph retrieval-augmented generation.

Library::

    from atomicrag import AtomicRAG
    rag = AtomicRAG({"reader": {"name": "none"}})
    rag.index(["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."])
    print(rag.query("Where was Marie Curie born?").items[0].text)

Research harness: ``python -m atomicrag.run`` (Hydra). Command line: ``atomicrag index|query|stats``.
The names below load on first use, so ``import atomicrag`` stays cheap (no torch, no spaCy).
"""
from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# torch announces "Sparse CSR tensor support is in beta" and "Sparse invariant checks are implicitly
# disabled" on the first CSR tensor of a process, i.e. on every CLI call and the first query. The graph
# is always CSR, built from validated indices (checks off is the choice), so the notes tell a user
# nothing. Only these two messages are filtered.
for _message in ("Sparse CSR tensor support is in beta", "Sparse invariant checks are implicitly disabled"):
    warnings.filterwarnings("ignore", message=_message, category=UserWarning)

# Each package registers its implementations (by import path, nothing heavy loads) in its own
# ``registrations`` module. ``core.registry`` names no package above it, so the root, which sits
# above every layer, tells it where they are; they are imported when a registry is first asked.
def _import_registrations() -> None:
    for package in ("llm", "embed", "atomize", "data", "retrieve", "answer", "evaluate", "library", "harness"):
        importlib.import_module(f"atomicrag.{package}.registrations")


from atomicrag.core.registry import on_first_use  # noqa: E402 - after the hook it registers

on_first_use(_import_registrations)

_LAZY = {
    "AtomicRAG": "atomicrag.library.api",
    "CORPUS_LEVEL_ATOMIZERS": "atomicrag.library.doc_states",
    "Document": "atomicrag.library.types",
    "QueryResult": "atomicrag.library.types",
    "ResultItem": "atomicrag.library.types",
    "Config": "atomicrag.core.config",
    "load_config": "atomicrag.core.compose",
    "as_llm": "atomicrag.library.adapters.dispatch",
    "as_embedder": "atomicrag.library.adapters.dispatch",
}

__all__ = [
    "CORPUS_LEVEL_ATOMIZERS",
    "AtomicRAG",
    "Config",
    "Document",
    "QueryResult",
    "ResultItem",
    "__version__",
    "as_embedder",
    "as_llm",
    "load_config",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from atomicrag.core.compose import load_config
    from atomicrag.core.config import Config
    from atomicrag.library.adapters.dispatch import as_embedder, as_llm
    from atomicrag.library.api import AtomicRAG
    from atomicrag.library.doc_states import CORPUS_LEVEL_ATOMIZERS
    from atomicrag.library.types import Document, QueryResult, ResultItem


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'atomicrag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
