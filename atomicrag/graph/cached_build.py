"""Index a corpus: atomize (cached) -> graph + embeddings (cached), each in its stage folder.

Cache keys hold exactly what decides a stage's output:

- atomize: hash of the chunks, the config fields the atomizer's registry entry declares
  (``cache_key=``), the spaCy and model versions (atomizers that key ``spacy_model``) and the
  LLM model + prompt versions (when an LLM is used);
- graph: the atomize key, ``embedder.name``, the graph config's edge fields and its released-code
  switches (``graph_fidelity``). Changing only the embedder re-embeds and rebuilds edges, but never re-atomizes.

The llm atomizer's per-chunk checkpoint lives in the (unfinished) atomize folder, so an
interrupted run resumes where it stopped.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from atomicrag.core.artifacts import StageCache, content_hash
from atomicrag.core.config import AtomizerConfig, Config
from atomicrag.core.registry import ATOMIZERS
from atomicrag.core.schemas import AtomizeResult, Chunk
from atomicrag.embed.protocol import Embedder
from atomicrag.graph.build import GRAPH_FIELDS, build_graph, graph_fidelity
from atomicrag.graph.io import load_atomize_result, load_graph, save_atomize_result, save_graph
from atomicrag.graph.structure import AtomEntityGraph

log = logging.getLogger(__name__)


def chunks_hash(chunks: list[Chunk]) -> str:
    return content_hash([[c.id, c.passage_id, c.title, c.text] for c in chunks])


def atomize_inputs(chunks_key: str, cfg: AtomizerConfig, atomizer: Any) -> dict[str, Any]:
    """The cache-key inputs of the atomize stage."""
    # the fields the atomizer's registry entry declares (core/registry.py)
    inputs: dict[str, Any] = {"chunks": chunks_key, "atomizer": cfg.name, "cfg": ATOMIZERS.cache_key(cfg.name, cfg)}
    if "spacy_model" in ATOMIZERS.cache_key_fields(cfg.name):  # an NLP atomizer: spaCy's output decides
        from atomicrag.atomize.nlp import model_version, spacy_version

        inputs["spacy"] = [spacy_version(), model_version(cfg.spacy_model)]
    if hasattr(atomizer, "fingerprint"):
        inputs["llm"] = atomizer.fingerprint()
    return inputs


def graph_inputs(atomize_key: str, cfg: Config, embedder: Embedder | None) -> dict[str, Any]:
    return {
        "atomize": atomize_key,
        "embedder": embedder.name if embedder is not None else None,
        "graph": {f: getattr(cfg.graph, f) for f in GRAPH_FIELDS},
        "fidelity": graph_fidelity(cfg.graph),
    }


def atomize_cached(chunks: list[Chunk], cfg: Config, llm: Any, cache_dir: str | Path, dataset_name: str, *,
                   atomizer: Any = None, progress: bool | None = None) -> tuple[AtomizeResult, str]:
    """The atomize stage with its cache; returns the result and its cache key."""
    if not chunks:
        raise ValueError(f"cannot index dataset {dataset_name!r}: the corpus has no chunks")
    from atomicrag.atomize import atomizer_fidelity, build_atomizer

    ckey = chunks_hash(chunks)
    if atomizer is None:
        from atomicrag.prompts.released import for_fidelity

        atomizer = build_atomizer(cfg.atomizer, llm=llm, progress=progress,
                                  released_prompts=for_fidelity(cfg.fidelity), **atomizer_fidelity(cfg.fidelity))
    inputs = atomize_inputs(ckey, cfg.atomizer, atomizer)
    key = content_hash("atomize", inputs)
    cache = StageCache(cache_dir, dataset_name, "atomize", key)
    cached = cache.load(load_atomize_result)  # a damaged folder is moved aside (warned) and redone
    if cached is not None:
        if not incomplete(cached):
            log.info("atomize: cache hit %s", cache.dir)
            return cached, key
        # written by an older version that cached failures as done: retry them (checkpoint kept)
        (cache.dir / "manifest.json").unlink()
    cache.begin()
    if hasattr(atomizer, "checkpoint_path"):
        atomizer.checkpoint_path = cache.path("llm_checkpoint.jsonl")  # resumable across restarts
    t0 = time.perf_counter()
    result = atomizer.atomize(chunks)
    result.stats.setdefault("atomize_s", round(time.perf_counter() - t0, 3))
    if incomplete(result):
        # never cached as done: the next run retries the failed chunks (the llm atomizer's
        # checkpoint keeps the finished ones), even without overwrite=true
        log.warning("atomize: %d of %d chunks failed; the stage is not cached as complete, the next run "
                    "retries them", len(result.failures), len(chunks))
        return result, key
    save_atomize_result(result, cache.dir)
    cache.finish(inputs, extra={"atoms": len(result.atoms), "failed_chunks": len(result.failures),
                                "llm_calls": result.llm_calls})
    return result, key


def load_graph_meta_failures(folder: Path) -> bool:
    """Whether a cached graph was built from a partial atomization (older versions cached those)."""
    import json

    try:
        meta = json.loads((Path(folder) / "graph.json").read_text(encoding="utf-8")).get("meta", {})
    except (OSError, ValueError):
        return False  # unreadable: StageCache.load finds it damaged, moves it aside and it is rebuilt
    return bool(meta.get("failures")) or bool(meta.get("atomize_stats", {}).get("vocab_failed_batches"))


def incomplete(result: AtomizeResult) -> bool:
    """An atomization with failed chunks (or LLM filter batches): usable, but never cached as done."""
    return bool(result.failures) or bool(result.stats.get("vocab_failed_batches"))


def index_corpus(chunks: list[Chunk], cfg: Config, llm: Any, embedder: Embedder | None,
                 cache_dir: str | Path, dataset_name: str, *, atomizer: Any = None,
                 progress: bool | None = None) -> AtomEntityGraph:
    """Atomize ``chunks`` and build the Atom-Entity Graph, reusing cached stages.

    ``atomizer`` overrides the registry's (for plug-ins and tests); the cache key still comes
    from ``cfg.atomizer`` plus the atomizer's ``fingerprint()``.
    """
    result, akey = atomize_cached(chunks, cfg, llm, cache_dir, dataset_name, atomizer=atomizer, progress=progress)
    inputs = graph_inputs(akey, cfg, embedder)
    gkey = content_hash("graph", inputs)
    cache = StageCache(cache_dir, dataset_name, "graph", gkey)
    cached_graph = cache.load(load_graph) if cache.complete and not load_graph_meta_failures(cache.dir) else None
    if cached_graph is not None:
        graph = cached_graph
        if embedder is not None and graph.atom_embeddings is not None \
                and graph.atom_embeddings.shape[1] != embedder.dim:
            raise ValueError(
                f"cached graph {cache.dir} has {graph.atom_embeddings.shape[1]}-dimensional embeddings but "
                f"embedder {embedder.name!r} has dim={embedder.dim}; the embedder's name must change with its "
                f"output (or delete that folder)"
            )
        log.info("graph: cache hit %s", cache.dir)
        return graph
    graph = build_graph(result, embedder, cfg.graph)
    graph.meta.update({"dataset": dataset_name, "atomize_key": akey, "graph_key": gkey,
                       "atomize_stats": {"chunks": len(chunks), **result.stats},
                       "failures": [dataclasses.asdict(f) for f in result.failures[:100]]})
    if incomplete(result):
        return graph  # built from a partial atomization: used by this run, never cached
    cache.begin()
    (cache.dir / "manifest.json").unlink(missing_ok=True)  # a stale one from a partial build (see above)
    save_graph(graph, cache.dir)
    cache.finish(inputs, extra={"nodes": graph.num_nodes, "entities": graph.num_entities, "atoms": graph.num_atoms})
    return graph
