"""``atomicrag data get DATASET [--from DIR] [--out DIR]`` and ``atomicrag data list``: the CLI's
dataset commands. What they run lives with the data (``atomicrag.data.get``: the pinned sources
and the build; ``atomicrag.data.listing``: the files a run would find), reached through the
Engine's API (:mod:`atomicrag.engine.api`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from atomicrag.engine import api


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``data get`` and ``data list`` on the ``atomicrag`` command's sub-parsers."""
    p = sub.add_parser("data", help="get a benchmark dataset in the normalised layout")
    dsub = p.add_subparsers(dest="data_command", required=True)
    g = dsub.add_parser("get", help="download (or take from --from) a dataset's sources and build it")
    g.add_argument("dataset", choices=sorted(api.DATASET_SPECS))
    g.add_argument("--from", dest="source_dir", metavar="DIR",
                   help="build from files you already have (AtomicRAG / HippoRAG / GraphRAG-Bench copies)")
    g.add_argument("--out", default="data", help="data folder to write <dataset>/ into (default: ./data, "
                   "which paths.data_dir=auto finds)")
    g.add_argument("--strict", action="store_true", help="with --from: refuse files that are not the pinned revision")
    g.set_defaults(func=cmd_data_get)
    s = dsub.add_parser("list", help="the datasets paths.data_dir finds: each file's rows and sha256")
    s.add_argument("--data-dir", default="auto", help="a data folder (default: auto, every root in search order)")
    s.set_defaults(func=cmd_data_list)


def cmd_data_get(args: argparse.Namespace) -> int:
    source_dir = Path(args.source_dir).expanduser() if args.source_dir else None
    if source_dir is not None and not source_dir.is_dir():
        raise FileNotFoundError(f"--from {source_dir}: no such folder")
    out_dir = Path(args.out).expanduser()
    try:
        summary = api.get_dataset(args.dataset, out_dir=out_dir, source_dir=source_dir,
                                  progress=not getattr(args, "quiet", False), strict=args.strict)
    except api.SourceError as exc:
        raise RuntimeError(str(exc)) from exc
    print(f"wrote {out_dir / args.dataset}: {api.dumps_summary(summary)}")
    if summary["not_pinned"]:
        print(f"atomicrag: warning: {len(summary['not_pinned'])} source files are not the pinned revision "
              "(listed in sources.json); results on this copy may differ from the published ones", file=sys.stderr)
    return 0


def cmd_data_list(args: argparse.Namespace) -> int:
    from atomicrag.core.config import PathsConfig

    roots = PathsConfig(data_dir=args.data_dir).data_roots()
    files = api.data_files(roots)
    if not files:
        raise FileNotFoundError(f"no dataset under {', '.join(map(str, roots))}: `atomicrag data get NAME` builds one")
    root = None
    for f in files:
        if f.root != root:
            root = f.root
            print(f"{root}")
        print(f"  {f.dataset + '/' + f.name:<52s} {f.rows:>9,} rows  sha256 {f.sha256}")
    return 0
