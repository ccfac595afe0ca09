"""Lazy registries: one per pluggable stage kind, the single source of its valid names.

Each entry maps a config ``name`` to the import path of its builder and declares what the
stage needs from the engine: ``"llm"`` (an LLM backend), ``"embedder"``, ``"graph"`` (an
Atom-Entity Graph index) or ``"atom_embeddings"`` (a propagator that scores atoms by their
vectors, so it gets the atom and query embeddings). A declaration is a set, or a function of the
stage's config slice when it depends on a field (the vocabulary atomizer needs an LLM only with
``vocab_llm_filter``). The config's allowed names are the registry keys (``config.py`` asks
``names()``), and "does this run need an LLM" is computed once from the declarations
(``core.needs.needs_llm``).

How to add an implementation
----------------------------
1. Write it in one module, with the builder signature of its kind (below).
2. Register it next to the code, in its package's ``registrations.py``, by import path (so
   importing atomicrag stays cheap), with what it needs::

       RETRIEVERS.add("my_walk", "atomicrag.retrieve.propagate.my_walk:build", needs=GRAPH)

   The package root (``atomicrag/__init__.py``) imports every package's ``registrations``; this
   module names no module above ``core`` (``tests/test_architecture.py``).
3. Add ``conf/<group>/<name>.yaml`` whose ``name:`` field is the registry key.

An entry of a kind whose one config section serves several entries (the retrievers) declares the
fields of that section it reads (``reads=``): a setting the chosen entry ignores is named at start
(``unread_settings``) and a baseline's config keeps only what its retriever reads.

An entry whose stage is cached also declares the config fields that key its cache
(``cache_key=``; ``cache_key_when_set=`` for fields keyed only while set). A plug-in outside the
package calls ``REGISTRY.register(name, obj, needs=..., cache_key=...)`` before the config is loaded. Builder signatures: atomizer ``(cfg, llm=, **deps)``; retriever ``(cfg,
**overrides) -> Propagator`` (or, without ``graph``, a passage retriever); decompose/sieve
``(cfg=, fidelity=, llm=, **sampling)``; reader ``(llm, kind, cfg, **sampling)``; judge ``(llm,
embedder, cfg, fidelity, **kwargs)``; embedder
``(cfg, pooling)``; llm ``(cfg, paths)``; dataset ``(cfg, data_dir, require_corpus)``.
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable
from typing import Any

Needs = Iterable[str] | Callable[[Any], Iterable[str]]
NEED_KINDS = frozenset({"llm", "embedder", "graph", "atom_embeddings"})


_FIRST_USE: list[Callable[[], None]] = []


def on_first_use(fn: Callable[[], None]) -> None:
    """Call ``fn`` (which imports modules that register entries) before any registry is first read."""
    _FIRST_USE.append(fn)


def discover() -> None:
    """Run the first-use hooks now (idempotent): every package's registrations are imported."""
    while _FIRST_USE:  # popped first: a registration module that reads a registry does not recurse
        _FIRST_USE.pop(0)()


class UnknownName(KeyError, ValueError):
    """A name no entry has: a ``KeyError`` for lookups, a ``ValueError`` for configs and factories."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._paths: dict[str, str] = {}
        self._needs: dict[str, Needs] = {}
        self._loaded: dict[str, Any] = {}
        self._keys: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # (cache_key, cache_key_when_set)
        self._reads: dict[str, frozenset[str]] = {}  # entries that declared which fields they read

    def add(self, name: str, path: str, needs: Needs = (), cache_key: Iterable[str] = (),
            cache_key_when_set: Iterable[str] = (), reads: Iterable[str] | None = None) -> None:
        if ":" not in path:
            raise ValueError(f"{self.kind} registry: path {path!r} must look like 'module:attribute'")
        self._paths[name] = path
        self._declare(name, needs, cache_key, cache_key_when_set, reads)

    def register(self, name: str, obj: Any, needs: Needs = (), cache_key: Iterable[str] = (),
                 cache_key_when_set: Iterable[str] = (), reads: Iterable[str] | None = None) -> None:
        """Register an already-imported object (for user plug-ins)."""
        self._loaded[name] = obj
        self._paths.setdefault(name, f"<object>:{name}")
        self._declare(name, needs, cache_key, cache_key_when_set, reads)

    def _declare(self, name: str, needs: Needs, cache_key: Iterable[str], cache_key_when_set: Iterable[str],
                 reads: Iterable[str] | None) -> None:
        self._set_needs(name, needs)
        self._keys[name] = (tuple(cache_key), tuple(cache_key_when_set))
        if reads is None:
            self._reads.pop(name, None)
        else:
            self._reads[name] = frozenset(reads)

    def _set_needs(self, name: str, needs: Needs) -> None:
        if not callable(needs):
            bad = set(needs) - NEED_KINDS
            if bad:
                raise ValueError(f"{self.kind} {name!r}: unknown needs {sorted(bad)}; known: {sorted(NEED_KINDS)}")
            needs = frozenset(needs)
        self._needs[name] = needs

    def names(self) -> tuple[str, ...]:
        discover()
        return tuple(sorted(self._paths))

    def __contains__(self, name: str) -> bool:
        discover()
        return name in self._paths

    def needs(self, name: str, cfg: Any = None) -> frozenset[str]:
        """What entry ``name`` needs under its config slice ``cfg``."""
        self._check(name)
        need = self._needs[name]
        return frozenset(need(cfg)) if callable(need) else need  # type: ignore[arg-type]

    def cache_key_fields(self, name: str) -> tuple[str, ...]:
        """Every config field entry ``name`` declared as deciding its output (always keyed or when set)."""
        self._check(name)
        always, when_set = self._keys[name]
        return always + when_set

    def cache_key(self, name: str, cfg: Any) -> dict[str, Any]:
        """The declared fields of entry ``name`` with their values in its config slice ``cfg``.

        ``cache_key_when_set`` fields are keyed only while set (truthy): they were added after caches
        existed, so a config that leaves them off keeps the key it had before them."""
        self._check(name)
        always, when_set = self._keys[name]
        out = {f: getattr(cfg, f) for f in always}
        out.update({f: getattr(cfg, f) for f in when_set if getattr(cfg, f)})
        return out

    def reads(self, name: str) -> frozenset[str] | None:
        """The fields of its config section entry ``name`` declared it reads (``reads=`` at
        registration); None for an entry that declared none (a plug-in: assume it reads them all)."""
        self._check(name)
        return self._reads.get(name)

    def readers(self, field_name: str) -> tuple[str, ...]:
        """The entries that declared reading ``field_name``, in registration order."""
        discover()
        return tuple(n for n in self._paths if field_name in self._reads.get(n, ()))

    def unread_settings(self, cfg: Any) -> list[str]:
        """Fields of the section ``cfg`` (a config dataclass with a ``name``) set away from their
        default that its entry never reads (a sweep over one of them would change nothing):
        ``["katz_beta (read by katz)"]``; none for an entry that declared no reads."""
        read = self.reads(cfg.name)
        if read is None:
            return []
        default = type(cfg)(name=cfg.name)
        return [f"{f.name} (read by {', '.join(self.readers(f.name))})" for f in dataclasses.fields(cfg)
                if f.name not in read and getattr(cfg, f.name) != getattr(default, f.name)]

    def _check(self, name: str) -> None:
        discover()
        if name not in self._paths:
            raise UnknownName(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")

    def get(self, name: str) -> Any:
        discover()
        if name in self._loaded:
            return self._loaded[name]
        self._check(name)
        module, attr = self._paths[name].split(":", 1)
        obj = getattr(importlib.import_module(module), attr)
        self._loaded[name] = obj
        return obj

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``get(name)(*args, **kwargs)``, failing clearly when a declared LLM is missing.

        The declaration is evaluated on ``kwargs["cfg"]`` (the stage's config slice), the LLM
        is ``kwargs["llm"]``."""
        if "llm" in self.needs(name, kwargs.get("cfg")) and kwargs.get("llm") is None:
            raise ValueError(f"{self.kind}.name={name} needs an LLM backend (llm=...)")
        return self.get(name)(*args, **kwargs)


def nothing(*_: Any, **__: Any) -> None:
    """The builder of a stage switched off (reader=none, judge=none): there is no object."""


LLM, EMB, GRAPH = frozenset({"llm"}), frozenset({"embedder"}), frozenset({"graph", "embedder"})

LLMS = Registry("llm")
EMBEDDERS = Registry("embedder")
ATOMIZERS = Registry("atomizer")
RETRIEVERS = Registry("retriever")
DECOMPOSERS = Registry("decompose")
SIEVES = Registry("sieve")
READERS = Registry("reader")
JUDGES = Registry("judge")
DATASETS = Registry("dataset format")
STORES = Registry("store")
