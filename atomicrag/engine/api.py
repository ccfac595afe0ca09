"""What the faces (``harness/``, ``library/``) use of the stages, in one place: the Engine's API.

The faces build on :class:`~atomicrag.engine.Engine` and the data types of ``core``; what else
they need of a stage or service package (an LLM client or embedder built from config, the index's
graph files and checks, the dataset commands, the scorer) they import from here, never from the
package itself (``[tool.importlinter]``'s ``faces-through-engine`` contract). So this table is the
whole surface the faces hold the stages by, and a stage may change anything not named here.

The table is written once, as the ``TYPE_CHECKING`` block below: type checkers read it as imports,
and at import time this module reads its own source (``ast``, no import runs) to learn which module
holds each name. Names resolve on every access (nothing is cached): importing this module loads no
stage (no torch), a face that imports a name inside a function loads its module then, and a test
that patches the stage's own module attribute (``atomicrag.llm.resident.find_resident``) is seen
by a face that looks the name up after the patch.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# ruff: noqa: F401 - the block below is the table; its imports run for type checkers only
if TYPE_CHECKING:  # the table: real imports for type checkers, parsed by _read_table at run time
    # answer: the reader's name, the sources a result cites, the reader's estimates for the run plan
    from atomicrag.answer.citations import Source, cite, with_marks
    from atomicrag.answer.estimate import passage_context, reader_context, reader_requests
    from atomicrag.answer.extractive import best_sentence
    from atomicrag.answer.readers import reader_summary, resolve_reader_name

    # atomize: an atom's id (the code-unit splitter makes atoms of its own), the indexing estimates
    from atomicrag.atomize.base import atom_id
    from atomicrag.atomize.estimate import atom_texts, index_requests

    # data: documents in, datasets got and listed, benchmarks loaded
    from atomicrag.data.build import dumps as dumps_summary
    from atomicrag.data.fetch import SourceError
    from atomicrag.data.get import SPECS as DATASET_SPECS
    from atomicrag.data.get import get_dataset
    from atomicrag.data.ingest import SUFFIXES, expand_paths, read_path, report_skipped
    from atomicrag.data.listing import data_files
    from atomicrag.data.loaders import DatasetMissing, check_present, load_dataset
    from atomicrag.data.token_windows import Chunker
    from atomicrag.data.validate import clean_text

    # embed: embedders from config, a saved index's embedder, the released code's coverage
    from atomicrag.embed.encoders import SentenceTransformerEmbedder
    from atomicrag.embed.factory import build_embedder, released_code_covers
    from atomicrag.embed.lazy import lazy_saved_embedder

    # evaluate: scoring a run, its judge, the judge's estimates
    from atomicrag.evaluate.aggregate import acc_type
    from atomicrag.evaluate.estimate import judge_requests
    from atomicrag.evaluate.judge_config import judge_from_config
    from atomicrag.evaluate.score import score_run

    # graph: the index's graph, its files and their checks
    from atomicrag.graph.build import GRAPH_FIDELITY_FIELDS
    from atomicrag.graph.canon import canonical_key
    from atomicrag.graph.edges import adjacency
    from atomicrag.graph.incremental import IndexedGraph, SynonymRows
    from atomicrag.graph.io import load_graph, save_graph
    from atomicrag.graph.stats import graph_stats
    from atomicrag.graph.structure import AtomEntityGraph, EdgeList
    from atomicrag.graph.verify import (
        IndexDamagedError,
        check_count,
        check_graph,
        check_synonym_rows,
        damaged,
        read_file,
        read_json_object,
    )

    # llm: clients from config, accounting, servers, the request and reply types
    from atomicrag.llm.accounting import Accountant, AccountedLLM
    from atomicrag.llm.backends import launch_vllm_for
    from atomicrag.llm.budget import MESSAGE_OVERHEAD
    from atomicrag.llm.cache import CacheProbe, LLMCacheDamagedError
    from atomicrag.llm.factory import build_llm, shared_backends
    from atomicrag.llm.hf_models import ServerEnvError, find_server_python, hf_model, user_server_venv
    from atomicrag.llm.openai_client import OpenAIClient, normalize_base_url
    from atomicrag.llm.protocol import ChatRequest, ChatResult
    from atomicrag.llm.resident import find_resident, keep_resident, pid_alive, state_dir, stop_resident
    from atomicrag.llm.resident import status as resident_status
    from atomicrag.llm.retry import RawReply, SyncBackend
    from atomicrag.llm.servers import llamacpp_server_missing

    # prompts: the released code's prompts (fidelity.prompts=released)
    from atomicrag.prompts.released import ReleasedCodeMissing, for_fidelity
    from atomicrag.prompts.released_sieve import load as load_released_sieve

    # retrieve: what a run's query stages did, their estimates
    from atomicrag.retrieve.decompose import decompose_summary
    from atomicrag.retrieve.estimate import decompose_requests, query_ner_requests, sieve_requests
    from atomicrag.retrieve.sieve import sieve_summary


def _read_table() -> dict[str, tuple[str, str]]:
    """name -> (module, attribute there), from the ``TYPE_CHECKING`` block of this module's source:
    the one list of names, so the table and what type checkers see cannot drift apart."""
    # the package runs from files (its presets in conf/ are read the same way), so its source is there
    table: dict[str, tuple[str, str]] = {}
    for node in ast.parse(Path(__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for st in node.body:
                if isinstance(st, ast.ImportFrom) and st.module:
                    table.update({a.asname or a.name: (st.module, a.name) for a in st.names})
    if not table:
        raise ImportError(f"{__name__}: no TYPE_CHECKING import block found in its source")
    return table


_EXPORTS: dict[str, tuple[str, str]] = _read_table()


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'atomicrag.engine.api' has no attribute {name!r}")
    module, attr = where
    return getattr(importlib.import_module(module), attr)


def __dir__() -> list[str]:
    return sorted(_EXPORTS)


__all__ = sorted(_EXPORTS)
