"""What the faces (``harness/``, ``library/``) use of the stages, in one place: the Engine's API.

The faces build on :class:`~atomicrag.engine.Engine` and the data types of ``core``; what else
they need of a stage or service package (an LLM client or embedder built from config, the index's
graph files and checks, the dataset commands, the scorer) they import from here, never from the
package itself (``[tool.importlinter]``'s ``faces-through-engine`` contract). So this table is the
whole surface the faces hold the stages by, and a stage may change anything not named here.

Names resolve on every access (nothing is cached): importing this module loads no stage (no
torch), a face that imports a name inside a function loads its module then, as before, and a test
that patches the stage's own module attribute (``atomicrag.llm.resident.find_resident``) is seen
by a face that looks the name up after the patch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# ruff: noqa: F401 - the block below names the table's exports for type checkers only
if TYPE_CHECKING:  # the same names, for type checkers (import-linter skips this block)
    from atomicrag.answer.citations import Source, cite, with_marks
    from atomicrag.answer.estimate import passage_context, reader_context, reader_requests
    from atomicrag.answer.extractive import best_sentence
    from atomicrag.answer.readers import reader_summary, resolve_reader_name
    from atomicrag.atomize.base import atom_id
    from atomicrag.atomize.estimate import atom_texts, index_requests
    from atomicrag.data.build import dumps as dumps_summary
    from atomicrag.data.fetch import SourceError
    from atomicrag.data.get import SPECS as DATASET_SPECS
    from atomicrag.data.get import get_dataset
    from atomicrag.data.ingest import SUFFIXES, expand_paths, read_path, report_skipped
    from atomicrag.data.listing import data_files
    from atomicrag.data.loaders import DatasetMissing, check_present, load_dataset
    from atomicrag.data.token_windows import Chunker
    from atomicrag.data.validate import clean_text
    from atomicrag.embed.encoders import SentenceTransformerEmbedder
    from atomicrag.embed.factory import build_embedder, released_code_covers
    from atomicrag.embed.lazy import lazy_saved_embedder
    from atomicrag.evaluate.aggregate import acc_type
    from atomicrag.evaluate.estimate import judge_requests
    from atomicrag.evaluate.judge_config import judge_from_config
    from atomicrag.evaluate.score import score_run
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
    from atomicrag.prompts.released import ReleasedCodeMissing, for_fidelity
    from atomicrag.prompts.released_sieve import load as load_released_sieve
    from atomicrag.retrieve.decompose import decompose_summary
    from atomicrag.retrieve.estimate import decompose_requests, query_ner_requests, sieve_requests
    from atomicrag.retrieve.sieve import sieve_summary

# name -> "module" (the module's attribute of that name) or "module:attribute" (another name there)
_EXPORTS: dict[str, str] = {
    # answer: the reader's name, the sources a result cites
    "Source": "atomicrag.answer.citations", "cite": "atomicrag.answer.citations",
    "with_marks": "atomicrag.answer.citations", "best_sentence": "atomicrag.answer.extractive",
    "resolve_reader_name": "atomicrag.answer.readers", "reader_summary": "atomicrag.answer.readers",
    # atomize: an atom's id (the code-unit splitter makes atoms of its own)
    "atom_id": "atomicrag.atomize.base",
    # data: documents in, datasets got and listed, benchmarks loaded
    "dumps_summary": "atomicrag.data.build:dumps", "SourceError": "atomicrag.data.fetch",
    "DATASET_SPECS": "atomicrag.data.get:SPECS", "get_dataset": "atomicrag.data.get",
    "SUFFIXES": "atomicrag.data.ingest", "expand_paths": "atomicrag.data.ingest",
    "read_path": "atomicrag.data.ingest", "report_skipped": "atomicrag.data.ingest",
    "data_files": "atomicrag.data.listing", "DatasetMissing": "atomicrag.data.loaders",
    "check_present": "atomicrag.data.loaders", "load_dataset": "atomicrag.data.loaders",
    "Chunker": "atomicrag.data.token_windows", "clean_text": "atomicrag.data.validate",
    # embed: embedders from config, a saved index's embedder, the released code's coverage
    "SentenceTransformerEmbedder": "atomicrag.embed.encoders", "build_embedder": "atomicrag.embed.factory",
    "released_code_covers": "atomicrag.embed.factory", "lazy_saved_embedder": "atomicrag.embed.lazy",
    # evaluate: scoring a run, its judge
    "acc_type": "atomicrag.evaluate.aggregate", "judge_from_config": "atomicrag.evaluate.judge_config",
    "score_run": "atomicrag.evaluate.score",
    # graph: the index's graph, its files and their checks
    "GRAPH_FIDELITY_FIELDS": "atomicrag.graph.build", "canonical_key": "atomicrag.graph.canon",
    "adjacency": "atomicrag.graph.edges", "IndexedGraph": "atomicrag.graph.incremental",
    "SynonymRows": "atomicrag.graph.incremental", "load_graph": "atomicrag.graph.io",
    "save_graph": "atomicrag.graph.io", "graph_stats": "atomicrag.graph.stats",
    "AtomEntityGraph": "atomicrag.graph.structure", "EdgeList": "atomicrag.graph.structure",
    "IndexDamagedError": "atomicrag.graph.verify", "check_count": "atomicrag.graph.verify",
    "check_graph": "atomicrag.graph.verify", "check_synonym_rows": "atomicrag.graph.verify",
    "damaged": "atomicrag.graph.verify", "read_file": "atomicrag.graph.verify",
    "read_json_object": "atomicrag.graph.verify",
    # llm: clients from config, accounting, servers, the request and reply types
    "AccountedLLM": "atomicrag.llm.accounting", "Accountant": "atomicrag.llm.accounting",
    "launch_vllm_for": "atomicrag.llm.backends", "MESSAGE_OVERHEAD": "atomicrag.llm.budget",
    "CacheProbe": "atomicrag.llm.cache", "LLMCacheDamagedError": "atomicrag.llm.cache",
    "build_llm": "atomicrag.llm.factory", "shared_backends": "atomicrag.llm.factory", "ServerEnvError": "atomicrag.llm.hf_models",
    "find_server_python": "atomicrag.llm.hf_models", "hf_model": "atomicrag.llm.hf_models",
    "user_server_venv": "atomicrag.llm.hf_models", "OpenAIClient": "atomicrag.llm.openai_client",
    "normalize_base_url": "atomicrag.llm.openai_client", "ChatRequest": "atomicrag.llm.protocol",
    "ChatResult": "atomicrag.llm.protocol", "find_resident": "atomicrag.llm.resident",
    "keep_resident": "atomicrag.llm.resident", "pid_alive": "atomicrag.llm.resident",
    "state_dir": "atomicrag.llm.resident", "stop_resident": "atomicrag.llm.resident",
    "resident_status": "atomicrag.llm.resident:status", "RawReply": "atomicrag.llm.retry",
    "SyncBackend": "atomicrag.llm.retry",
    "llamacpp_server_missing": "atomicrag.llm.servers",
    # prompts: the released code's prompts (fidelity.prompts=released)
    "ReleasedCodeMissing": "atomicrag.prompts.released", "for_fidelity": "atomicrag.prompts.released",
    "load_released_sieve": "atomicrag.prompts.released_sieve:load",
    # retrieve: what a run's query stages did
    "decompose_summary": "atomicrag.retrieve.decompose", "sieve_summary": "atomicrag.retrieve.sieve",
    # the stages' estimates for the run plan: harness/plan.py asks each stage for the requests it will send
    "atom_texts": "atomicrag.atomize.estimate", "index_requests": "atomicrag.atomize.estimate",
    "decompose_requests": "atomicrag.retrieve.estimate", "query_ner_requests": "atomicrag.retrieve.estimate",
    "sieve_requests": "atomicrag.retrieve.estimate", "passage_context": "atomicrag.answer.estimate",
    "reader_context": "atomicrag.answer.estimate", "reader_requests": "atomicrag.answer.estimate",
    "judge_requests": "atomicrag.evaluate.estimate",
}


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'atomicrag.engine.api' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr or name)


def __dir__() -> list[str]:
    return sorted(_EXPORTS)


__all__ = sorted(_EXPORTS)
