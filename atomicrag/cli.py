"""``atomicrag`` command line: build, update, query and inspect a library index.

    atomicrag index DOCS_DIR --out INDEX_DIR [--config FILE] [--set group.field=value ...]
    atomicrag insert DOCS_DIR --index INDEX_DIR
    atomicrag delete DOC_ID [DOC_ID ...] --index INDEX_DIR
    atomicrag query "question" [...] --index INDEX_DIR [--json] [--top N] [--no-answer]
    atomicrag stats --index INDEX_DIR [--json]

Documents: every ``.txt``/``.md`` file under DOCS_DIR (id = path relative to DOCS_DIR, title =
file name without suffix) and every line of every ``.jsonl`` file (``text`` plus optional
``id``/``doc_id``, ``title`` and metadata). DOCS_DIR may also be one such file. Files are read
in sorted path order, so the same folder always gives the same index.

This is the library's front door; the research harness (Hydra sweeps, paper tables) is
``atomicrag-run`` / ``python -m atomicrag.run``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = (".txt", ".md")


def read_documents(source: str | Path) -> list[dict[str, Any]]:
    """Documents of a folder (or one file) as dicts, in sorted path order."""
    root = Path(source)
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist")
    from .data.validate import decode_line, read_text

    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    docs: list[dict[str, Any]] = []
    for path in files:
        suffix = path.suffix.lower()
        rel = path.name if root.is_file() else path.relative_to(root).as_posix()
        if suffix in TEXT_SUFFIXES:
            docs.append({"id": rel, "title": path.stem, "text": read_text(path), "path": rel})
        elif suffix == ".jsonl":
            for n, raw in enumerate(path.read_bytes().splitlines(), 1):
                line = decode_line(path, n, raw)  # a non-UTF-8 line is reported as file:line
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: invalid JSON ({exc.msg})") from exc
                if not isinstance(rec, dict) or "text" not in rec:
                    raise ValueError(f"{path}:{n}: each line must be an object with a 'text' key")
                docs.append(rec)
    if not docs:
        raise ValueError(f"no documents found in {root} (looked for {', '.join(TEXT_SUFFIXES)} and .jsonl files)")
    return docs


def _overrides(pairs: list[str]) -> dict[str, Any]:
    """``group.field=value`` pairs -> nested dict (values parsed as YAML scalars: 5, true, null, text)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects group.field=value, got {pair!r}")
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = yaml.safe_load(value)
    return out


def _config(args: argparse.Namespace) -> dict[str, Any] | None:
    from .api import _deep_merge

    base: dict[str, Any] = {}
    if getattr(args, "config", None):
        from .config import read_config_file

        base = read_config_file(args.config)  # the library's reader: errors name the file and line
    sets = _overrides(getattr(args, "set", None) or [])
    merged = _deep_merge(base, sets)
    return merged or None


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def cmd_index(args: argparse.Namespace) -> int:
    from .api import AtomicRAG

    docs = read_documents(args.docs)
    with AtomicRAG(_config(args), progress=_progress(args)) as rag:
        rag.index(docs)
        st = rag.stats()
        if st["chunks"] and st["failed_chunks"] == st["chunks"]:  # nothing to save: say why, exit non-zero
            from .failures import index_failure_error

            reasons = [f.reason for s in rag._states.values() for f in s.failures]
            raise RuntimeError(index_failure_error(st["failed_chunks"], st["chunks"], reasons))
        rag.save(args.out)
        print(f"indexed {len(rag)} documents -> {args.out} ({rag!r})")
    return 0


def cmd_insert(args: argparse.Namespace) -> int:
    from .api import AtomicRAG

    with AtomicRAG.load(args.index, progress=_progress(args)) as rag:
        rag.insert(read_documents(args.docs), replace=args.replace)
        rag.save(args.index)
        print(f"{rag!r} saved to {args.index}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from .api import AtomicRAG

    with AtomicRAG.load(args.index, progress=_progress(args)) as rag:
        n = rag.delete(args.ids, missing_ok=args.missing_ok)
        rag.save(args.index)
        print(f"deleted {n} documents; {rag!r}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from .api import AtomicRAG

    overrides = _overrides(args.set or [])
    with AtomicRAG.load(args.index, config=overrides or None, progress=_progress(args)) as rag:
        results = rag.query(list(args.questions), answer=False if args.no_answer else None)
    for r in results:
        if args.top is not None:
            r.items = r.items[: args.top]
    failed = [(r.query, e) for r in results for e in r.errors]
    if args.json:
        payload: Any = [r.to_dict() for r in results]  # errors are in each result's "errors"
        print(json.dumps(payload[0] if len(payload) == 1 else payload, ensure_ascii=False, indent=2))
        return 1 if failed else 0
    for r in results:
        print(f"Q: {r.query}")
        if r.answer is not None:
            print(f"A: {r.answer}" if r.answer or not r.errors else "A: (none: a step failed, errors below)")
        for rank, item in enumerate(r.items, 1):
            src = ",".join(item.source_doc_ids)
            print(f"{rank:>3}. {item.score:.4f}  [{src}]  {item.text}")
        print()
    for q, err in failed:  # a failed reader/sieve/decomposition is an error, not an empty answer
        print(f"atomicrag: error: {q!r}: {err}", file=sys.stderr)
    return 1 if failed else 0


def cmd_stats(args: argparse.Namespace) -> int:
    from .api import AtomicRAG

    with AtomicRAG.load(args.index, progress=False) as rag:
        st = rag.stats()
    if args.json:
        print(json.dumps(st, ensure_ascii=False, indent=2, default=str))
    else:
        for k, v in st.items():
            if not isinstance(v, dict):
                print(f"{k:>24}: {v:,.3f}" if isinstance(v, float) else f"{k:>24}: {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="atomicrag", description="Atom-Entity Graph RAG: index, update and query "
                                "a document collection.")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("index", help="build an index from a folder of .txt/.md/.jsonl files")
    s.add_argument("docs", help="folder (or one file) of documents")
    s.add_argument("--out", required=True, help="index directory to write")
    s.add_argument("--config", help="YAML or JSON config file")
    s.add_argument("--set", action="append", metavar="GROUP.FIELD=VALUE", help="config override (repeatable)")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser("insert", help="add documents to an existing index")
    s.add_argument("docs")
    s.add_argument("--index", required=True)
    s.add_argument("--replace", action="store_true", help="replace documents whose id already exists")
    s.set_defaults(func=cmd_insert)

    s = sub.add_parser("delete", help="remove documents by id")
    s.add_argument("ids", nargs="+")
    s.add_argument("--index", required=True)
    s.add_argument("--missing-ok", action="store_true")
    s.set_defaults(func=cmd_delete)

    s = sub.add_parser("query", help="retrieve (and answer, if a reader is configured)")
    s.add_argument("questions", nargs="+")
    s.add_argument("--index", required=True)
    s.add_argument("--json", action="store_true", help="print QueryResult JSON")
    s.add_argument("--top", type=int, help="show only the best N atoms")
    s.add_argument("--no-answer", action="store_true", help="retrieval only")
    s.add_argument("--set", action="append", metavar="GROUP.FIELD=VALUE",
                   help="query-time override, e.g. retriever.top_k=10 (repeatable)")
    s.set_defaults(func=cmd_query)

    s = sub.add_parser("stats", help="corpus and graph statistics")
    s.add_argument("--index", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_stats)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, FileExistsError, KeyError, RuntimeError) as exc:
        # user errors: one clear line, no traceback
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"atomicrag: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
