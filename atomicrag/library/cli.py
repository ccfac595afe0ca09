"""``atomicrag`` command line: build, update, query and inspect a library index.

    atomicrag index PATH [PATH ...] --out INDEX_DIR [--force] [--config FILE] [--set group.field=value ...]
    atomicrag insert PATH [PATH ...] --index INDEX_DIR [--replace]   (names new documents whose chunks failed)
    atomicrag delete DOC_ID [DOC_ID ...] --index INDEX_DIR
    atomicrag query "question" [...] --index INDEX_DIR [--json] [--top N] [--no-answer]
    atomicrag docs --index INDEX_DIR [--json]
    atomicrag stats --index INDEX_DIR [--json]
    atomicrag export FILE.graphml|FILE.json --index INDEX_DIR
    atomicrag serve [--config FILE] [--set llm=...]   # keep the LLM server up for later queries
    atomicrag serve --status | --stop
    atomicrag serve --index INDEX_DIR [--port 8765] [--set ...]   # HTTP server holding the index; `query` uses it
                    [--host H (needs $ATOMICRAG_API_KEY)] [--cors-origin URL] [--allow-host NAME]
    atomicrag setup [--check] [--venv DIR]   # build/find the CPU vLLM server environment and SmolLM2
    atomicrag data get DATASET [--from DIR] [--out DATA_DIR]   (a benchmark in the normalised layout)
    atomicrag data list [--data-dir DIR]   (the datasets a run finds: rows and sha256 of each file)

Documents: files and folders (searched recursively) of ``.txt``, ``.md``, ``.jsonl``,
``.html`` and ``.pdf`` files (``atomicrag.data.ingest``); skipped files are listed on stderr.
A file's id is its path relative to the folder without the suffix (``notes/intro``). Without
``--config`` the defaults are ``conf/library.yaml``'s group options (the offline MiniLM embedder,
the default retriever and LLM); ``--set`` takes Hydra's override grammar, as
``python -m atomicrag.run`` does: ``--set retriever=ppr`` an option, ``--set retriever.top_k=10`` a field. ``delete``, ``docs``, ``stats`` and ``export`` load no model.

A failure is one line on stderr and exit status 2 (Ctrl-C: 130), naming the file or config key
at fault (``atomicrag.library.cli_errors``); ``--debug`` (before or after the command) adds the
traceback.

This is the library's front door; the research harness (Hydra sweeps, paper tables) is
``atomicrag-run`` / ``python -m atomicrag.run``.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from atomicrag.library.cli_errors import writing_index


def read_documents(source: str | Path) -> list[dict[str, Any]]:
    """Documents of a file or folder as dicts (``data.ingest.read_path``); skipped files are logged."""
    from atomicrag.engine.api import read_path, report_skipped

    docs, skipped = read_path(source)
    report_skipped(source, skipped)
    return docs


def _config(args: argparse.Namespace) -> Any:
    """The command's ``Config``: the ``--config`` file, then each ``--set`` (Hydra's override
    grammar, as ``python -m atomicrag.run`` takes it: ``retriever=ppr``, ``retriever.top_k=10``)."""
    from atomicrag.core.compose import load_config

    return load_config(getattr(args, "config", None), overrides=list(getattr(args, "set", None) or []))


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _existing_index(path: str) -> None:
    if not Path(path).is_dir():
        raise FileNotFoundError(f"{path}: no such index folder (build one with: atomicrag index DOCS --out {path})")


def _paths(items: list[str]) -> list[Path]:
    """Command-line document arguments are paths, never document text."""
    paths = [Path(p) for p in items]
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist")
    return paths


def cmd_index(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG, no_answering_warning

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):  # checked before any work
        if not (out / "manifest.json").is_file():
            raise FileExistsError(f"{out} exists and is not an atomicrag index; refusing to overwrite it")
        if not args.force:
            raise FileExistsError(f"{out} exists; pass --force to overwrite it")
    docs = _paths(args.docs)
    with no_answering_warning():  # index() raises the same text at once: printed once, not twice
        rag = AtomicRAG(_config(args), progress=_progress(args))
    with rag:
        rag.index(docs)
        st = rag.stats()
        if st["chunks"] and st["failed_chunks"] == st["chunks"]:  # nothing to save: say why, exit non-zero
            from atomicrag.engine.failures import index_failure_error

            reasons = [reason for r in rag.failures for reason in r.reasons]
            raise RuntimeError(index_failure_error(st["failed_chunks"], st["chunks"], reasons))
        with writing_index(out):
            rag.save(out)
        print(f"indexed {len(rag)} documents -> {out} ({rag!r})")
    return 0


def cmd_insert(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG
    from atomicrag.library.io import index_lock
    from atomicrag.library.types import normalize_documents

    # the write lock from load to save: a second writer waits, then loads this one's result
    _existing_index(args.index)  # before the lock: a missing index leaves no lock file behind
    with writing_index(args.index), index_lock(args.index), \
            AtomicRAG.load(args.index, progress=_progress(args)) as rag:
        # normalized here, as insert() does, so the report can name the documents of this call
        docs = normalize_documents(_paths(args.docs), taken=() if args.replace else {d.id for d in rag.documents},
                                   text_titles=rag.config.dataset.text_titles)
        rag.insert(docs, replace=args.replace)
        report = rag.report(d.id for d in docs)
        chunks, failed = sum(r.chunks for r in report), sum(r.failed_chunks for r in report)
        # every chunk of the new documents failed: the index is left as it was on disk and the
        # command fails (as `index` does)
        if chunks and failed == chunks:
            from atomicrag.engine.failures import index_failure_error

            raise RuntimeError(index_failure_error(failed, chunks, [x for r in report for x in r.reasons])
                               + f"; {args.index} was not changed")
        rag.save(args.index)
        for r in report:
            if r.failures:  # saved with its failures: the library's retry_failed() redoes them
                print(f"atomicrag: {r.doc_id}: {r.failed_chunks} of {r.chunks} chunks failed: {'; '.join(r.reasons[:3])}",
                      file=sys.stderr)
        print(f"{rag!r} saved to {args.index}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG
    from atomicrag.library.io import index_lock

    # the write lock from load to save: a second writer waits, then loads this one's result
    _existing_index(args.index)  # before the lock: a missing index leaves no lock file behind
    with writing_index(args.index), index_lock(args.index), \
            AtomicRAG.load(args.index, progress=_progress(args)) as rag:
        n = rag.delete(args.ids, missing_ok=args.missing_ok)
        rag.save(args.index)
        print(f"deleted {n} documents; {rag!r}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from atomicrag.library.types import check_questions

    check_questions(list(args.questions))  # exit status 2 before the index loads
    results = _query_server(args)
    budget = "reader.max_tokens"  # the server's setting, when a server answered
    if results is None:  # no server holds this index (or the command changes its settings): load it
        from atomicrag.library.api import AtomicRAG  # torch and the engine: only when loading here

        with AtomicRAG.load(args.index, overrides=args.set or (), progress=_progress(args)) as rag:
            results = rag.query(list(args.questions), answer=False if args.no_answer else None)
            budget = f"reader.max_tokens={rag.config.reader.max_tokens}"
    for r in results:
        if args.top is not None:
            r.items = r.items[: args.top]
    failed = [(r.query, e) for r in results for e in r.errors]
    # an answer cut by reader.max_tokens is a failed answer for the command: said, exit non-zero,
    # with the advice to raise the budget only where it would help: a reply that looped (a line
    # repeated until the cut) would loop longer, and its answer is the extractive one, marked
    failed += [(r.query, f"the answer was cut at {budget} (raise it: --set reader.max_tokens=N)")
               for r in results if r.answer_cut and not getattr(r, "answer_looped", False)]
    if args.json:
        payload: Any = [r.to_dict() for r in results]  # errors are in each result's "errors"
        print(json.dumps(payload[0] if len(payload) == 1 else payload, ensure_ascii=False, indent=2))
        return 1 if failed else 0
    for r in results:
        print(f"Q: {r.query}")
        if r.answer is not None:
            if getattr(r, "extractive", False):
                why = "its reply looped" if getattr(r, "answer_looped", False) else (
                    "its reply was cut by the token budget" if r.answer_cut else "it wrote none")
                print(f"A: {r.cited_answer or r.answer}  (extractive: the best-supported retrieved sentence; "
                      f"the reader gave no answer, {why})")
            elif r.answer:
                print(f"A: {r.cited_answer or r.answer}" + (" (cut by the token budget)" if r.answer_cut else ""))
            else:
                print("A: (none: the reply was cut by the token budget before its answer)" if r.answer_cut
                      else "A: (none: a step failed, errors below)" if r.errors else "A: (empty)")
            for src in r.sources:
                print(f"   [{src.n}] {src.doc_id}" + (f" ({src.title})" if src.title else ""))
        for rank, item in enumerate(r.items, 1):
            src = ",".join(item.source_doc_ids)
            print(f"{rank:>3}. {item.score:.4f}  [{src}]  {item.text}")
        print()
    for q, err in failed:  # a failed reader/sieve/decomposition is an error, not an empty answer
        print(f"atomicrag: error: {q!r}: {err}", file=sys.stderr)
    return 1 if failed else 0


def _query_server(args: argparse.Namespace) -> list[Any] | None:
    """The results from a running ``atomicrag serve --index`` of this index, or None when there is
    none (or ``--set``/``--no-server`` asks for a fresh load: a server's settings are fixed)."""
    if args.set or getattr(args, "no_server", False):
        return None
    from atomicrag.library.http_server import find_index_server, remote_query

    url = find_index_server(args.index)
    if url is None:
        return None
    return remote_query(url, list(args.questions), answer=False if args.no_answer else None)


def cmd_stats(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG

    with AtomicRAG.load(args.index, progress=False) as rag:
        st = rag.stats()
    if args.json:
        print(json.dumps(st, ensure_ascii=False, indent=2, default=str))
    else:
        for k, v in st.items():
            if not isinstance(v, dict):
                print(f"{k:>24}: {v:,.3f}" if isinstance(v, float) else f"{k:>24}: {v}")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG

    with AtomicRAG.load(args.index, progress=False) as rag:
        docs = rag.documents
    if args.json:
        print(json.dumps([{"id": d.id, "title": d.title, "chars": len(d.text), "meta": d.meta} for d in docs],
                         ensure_ascii=False, indent=2))
    else:
        for d in docs:
            print(f"{d.id}\t{d.title}" if d.title else d.id)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from atomicrag.library.api import AtomicRAG

    with AtomicRAG.load(args.index, progress=False) as rag:
        data = rag.export(args.out)
    n_edges = sum(len(e) for e in data["edges"].values())
    print(f"wrote {args.out}: {len(data['atoms'])} atoms, {len(data['entities'])} entities, {n_edges} edges")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Keep one local LLM server up; ``query`` finds it (``llm.resident``) instead of starting one."""
    from atomicrag.engine.api import find_resident, keep_resident, resident_status, state_dir, stop_resident

    if getattr(args, "index", None):  # an HTTP server holding this index (library.http_server)
        from atomicrag.library import http_server

        if args.stop:
            state = http_server.stop_index_server(args.index)
            print(f"stopped the server of {args.index} (pid {state['pid']}, {state['url']})" if state
                  else f"no server of {args.index} was running")
            return 0
        if args.status:
            url = http_server.find_index_server(args.index)
            print(f"running: {args.index} at {url}" if url else f"no server of {args.index} is running")
            return 0 if url else 1
        if args.config:
            raise ValueError("serve --index takes the index's own config; change query-time settings with --set")
        from atomicrag.library.http_access import API_KEY_ENV, api_key_from_env

        key = api_key_from_env(args.api_key_env)
        if key is None and args.api_key_env != API_KEY_ENV:  # named, so meant: not a silent fallback
            raise ValueError(f"--api-key-env {args.api_key_env}: that environment variable is not set or empty")
        return http_server.serve_index(args.index, host=args.host, port=args.port, overrides=args.set or (),
                                       progress=_progress(args), api_key=key,
                                       cors_origins=args.cors_origin or (), allowed_hosts=args.allow_host or ())
    if args.stop:
        had, state = stop_resident()
        print(f"stopped the {state['model']} server (pid {state['pid']}, {state['base_url']})" if had and state
              else "no server was running")
        return 0
    kind, state = resident_status()
    if args.status:
        if kind == "running" and state:
            print(f"running: {state['model']} at {state['base_url']} (pid {state['pid']}, since {state['started']}; "
                  f"log {state['log']})")
        else:
            print("no server is running" + (" (a stale record was found; the next command removes it)"
                                            if kind == "stale" else ""))
        return 0 if kind == "running" else 1
    from atomicrag.core.config import PathsConfig
    from atomicrag.engine.api import launch_vllm_for

    cfg = _config(args).llm
    if cfg.name != "vllm" or cfg.base_url or cfg.base_urls:
        raise ValueError(f"serve keeps a local vLLM server up; llm.name={cfg.name}"
                         f"{' with a base_url' if cfg.base_url or cfg.base_urls else ''} needs none to be started")
    if kind == "running" and state:
        if find_resident(cfg.model):
            print(f"already running: {state['model']} at {state['base_url']} (pid {state['pid']})")
            return 0
        raise RuntimeError(f"a server for {state['model']} is running at {state['base_url']}; "
                           "stop it first (atomicrag serve --stop)")
    find_resident(cfg.model)  # removes a stale record
    t0 = time.perf_counter()
    server = launch_vllm_for(cfg, PathsConfig(cache_dir=str(state_dir())))
    state = keep_resident(server, cfg.model, cfg.model_path or "")
    print(f"serving {cfg.model} at {state['base_url']} (pid {state['pid']}, started in "
          f"{time.perf_counter() - t0:.0f} s); `atomicrag query` uses it; stop it with `atomicrag serve --stop`")
    return 0


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the current ``sys.stderr`` (looked up per record, so redirection is followed)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def _setup_logging() -> None:
    """Warnings (skipped files, failed chunks) as one line each on stderr; installed once."""
    log = logging.getLogger("atomicrag")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        handler = _StderrHandler()
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("atomicrag: %(levelname)s: %(message)s"))
        log.addHandler(handler)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="atomicrag", description="Atom-Entity Graph RAG: index, update and query "
                                "a document collection.")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no library banners (errors and warnings still print)")
    p.add_argument("--debug", action="store_true", help="print the traceback of a failure (also after the command)")
    # --debug after the subcommand too; SUPPRESS keeps a subcommand from resetting the top-level value
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("index", parents=[debug], help="build an index from files/folders (.txt .md .jsonl .html .pdf)")
    s.add_argument("docs", nargs="+", help="files and folders of documents")
    s.add_argument("--out", required=True, help="index directory to write")
    s.add_argument("--force", action="store_true", help="overwrite an existing index at --out")
    s.add_argument("--config", help="YAML or JSON config file")
    s.add_argument("--set", action="append", metavar="GROUP.FIELD=VALUE", help="config override (repeatable)")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser("insert", parents=[debug], help="add documents to an existing index")
    s.add_argument("docs", nargs="+", help="files and folders of documents")
    s.add_argument("--index", required=True)
    s.add_argument("--replace", action="store_true", help="replace documents whose id already exists")
    s.set_defaults(func=cmd_insert)

    s = sub.add_parser("delete", parents=[debug], help="remove documents by id")
    s.add_argument("ids", nargs="+")
    s.add_argument("--index", required=True)
    s.add_argument("--missing-ok", action="store_true")
    s.set_defaults(func=cmd_delete)

    s = sub.add_parser("query", parents=[debug], help="retrieve (and answer, if a reader is configured)")
    s.add_argument("questions", nargs="+")
    s.add_argument("--index", required=True)
    s.add_argument("--json", action="store_true", help="print QueryResult JSON")
    s.add_argument("--top", type=int, help="show only the best N atoms")
    s.add_argument("--no-answer", action="store_true", help="retrieval only")
    s.add_argument("--set", action="append", metavar="GROUP.FIELD=VALUE",
                   help="query-time override, e.g. retriever.top_k=10 (repeatable; loads the index itself)")
    s.add_argument("--no-server", action="store_true",
                   help="load the index here even when `atomicrag serve --index` holds it")
    s.set_defaults(func=cmd_query)

    s = sub.add_parser("stats", parents=[debug], help="corpus and graph statistics")
    s.add_argument("--index", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_stats)

    s = sub.add_parser("docs", parents=[debug], help="list the document ids (and titles) of an index")
    s.add_argument("--index", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_docs)

    s = sub.add_parser("export", parents=[debug], help="write the graph as GraphML (Gephi, Cytoscape) or JSON")
    s.add_argument("out", help="output file: .graphml or .json")
    s.add_argument("--index", required=True)
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("serve", parents=[debug], help="keep the configured LLM server up for later commands "
                       "(--stop ends it); with --index, serve an index over HTTP")
    s.add_argument("--config", help="YAML or JSON config file (its llm section)")
    s.add_argument("--set", action="append", metavar="GROUP.FIELD=VALUE", help="config override, e.g. llm=vllm_cpu")
    group = s.add_mutually_exclusive_group()
    group.add_argument("--stop", action="store_true", help="stop the server and forget it")
    group.add_argument("--status", action="store_true", help="say whether one is running (exit 1 if not)")
    s.add_argument("--index", help="serve this index over HTTP (JSON API and /v1/chat/completions) "
                   "from one process holding the index and its models")
    s.add_argument("--host", default="127.0.0.1", help="with --index: address to listen on")
    s.add_argument("--port", type=int, default=8765, help="with --index: port (0: any free port)")
    s.add_argument("--api-key-env", default="ATOMICRAG_API_KEY", metavar="VAR",
                   help="with --index: the environment variable holding the bearer token clients must send "
                   "(required with a --host other than loopback; a key is never taken on the command line)")
    s.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                   help="with --index: a site whose pages may call the server (https://app.example.org)")
    s.add_argument("--allow-host", action="append", metavar="NAME",
                   help="with --index: a Host name it answers to besides loopback (behind a proxy)")
    s.set_defaults(func=cmd_serve)

    from atomicrag.library.data_cmd import add_parser as add_data_parser
    from atomicrag.library.setup_cmd import add_parser as add_setup_parser

    add_setup_parser(sub)  # atomicrag setup: the LLM server environment for an installed package
    add_data_parser(sub)  # atomicrag data get DATASET [--from DIR]
    for sp in sub.choices.values():  # -q after the subcommand too; SUPPRESS keeps a -q given before it
        sp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars, no library banners")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging()
    from contextlib import nullcontext

    from atomicrag.core.progress import silence_libraries
    from atomicrag.library.cli_errors import report

    # -q: before any model loads, so transformers' own bars and banners are off too
    try:
        with silence_libraries() if args.quiet else nullcontext():
            return int(args.func(args))
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the CLI reports every failure
        # every failure is one line on stderr (exit 2; Ctrl-C 130); the traceback only under --debug
        return report(exc, debug=bool(getattr(args, "debug", False)))


if __name__ == "__main__":
    sys.exit(main())
