#!/usr/bin/env python
"""Publish finished runs: copy them from where runs write (``runs/``, gitignored) into the
repository's records (``results/``, committed), which ``scripts/make_tables.py`` reads.

    python scripts/publish_runs.py                       # every finished run under runs/
    python scripts/publish_runs.py quickstart table2     # only these experiments
    python scripts/publish_runs.py --dry-run             # say what would be copied

Runs never write into ``results/`` themselves, so a fresh clone's ``make run`` computes its
numbers instead of finding a committed run that satisfies its cache, and running leaves
``git status`` clean. Publishing is the one deliberate step that changes the records: a run
folder replaces the record of the same name (same experiment, dataset, split and run name).
Failed or unfinished runs are never published.

A run's ``predictions.jsonl`` is copied whole when it is at most ``RECORD_BYTES`` (2 MB);
a larger one (a full-DEV run holds 5-15 MB of traces) is published as record rows: every
question keeps its id, type, gold, answer, scores, tokens, seconds, errors and cuts, which
is what the tables' intervals and ``tests/scripts/test_records_rederive.py`` read, and loses
its traces (seeds, candidates, sieve, context, decomposition, raw reply) and every retrieved
passage past the deepest recall@k. ``publish.json`` beside it says what was dropped and from
how many bytes. A record that is still too large is not published (its old record stays, the
other runs are still published, and the exit status is 1).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atomicrag.core.artifacts import write_json_atomic, write_jsonl_atomic
from atomicrag.core.schemas import TRACE_FIELDS
from atomicrag.harness.tracking import is_finished

# what a run folder holds that is a record (temporary files of a crashed write are not)
_RECORD_FILES = ("config.yaml", "metrics.json")
RECORD_BYTES = 2_000_000  # the largest file a record commits; larger predictions are trimmed
RANKED_KEYS = ("retrieved_passages", "retrieved_titles")  # cut to the deepest recall@k
_RECALL_AT = re.compile(r"^recall@(\d+)$")


class RecordTooLarge(ValueError):
    """A run's predictions exceed RECORD_BYTES even as record rows."""


def record_row(row: dict, depth: int) -> dict:
    """One question's record row: ``row`` without its traces, ranked lists cut to ``depth``."""
    out = {k: v for k, v in row.items() if k not in TRACE_FIELDS}  # traces: what a run did, kept under runs/
    for key in RANKED_KEYS:
        if isinstance(out.get(key), list):
            out[key] = out[key][:depth]
    return out


def recall_depth(rows: list[dict]) -> int:
    """The deepest k of the rows' recall@k scores (5 when they have none): what a ranked list
    must keep for its recall to be checked again."""
    ks = [int(m.group(1)) for r in rows for k in r if (m := _RECALL_AT.match(k))]
    return max(ks, default=5)


def publish_predictions(src: Path, dest: Path, limit: int | None = None) -> dict | None:
    """Copy ``src`` (a run's predictions.jsonl) to ``dest``: whole when it is at most ``limit``
    bytes (default ``RECORD_BYTES``), else as record rows. Returns what was dropped (None when
    copied whole)."""
    limit = RECORD_BYTES if limit is None else limit
    size = src.stat().st_size
    if size <= limit:
        shutil.copy2(src, dest)
        return None
    rows = []
    with src.open(encoding="utf-8") as fh:
        for no, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{src}:{no}: not JSON ({exc.msg})") from exc
    depth = recall_depth(rows)
    write_jsonl_atomic(dest, [record_row(r, depth) for r in rows])
    if dest.stat().st_size > limit:
        raise RecordTooLarge(f"{src}: {dest.stat().st_size:,} bytes as record rows ({len(rows)} questions), "
                             f"over the {limit:,}-byte limit of a record; not published")
    dropped = sorted({k for r in rows for k in r if k in TRACE_FIELDS})
    return {"predictions": "record rows", "source_bytes": size, "dropped_keys": dropped,
            "ranked_lists_cut_to": depth, "full_rows": "the run folder this was published from"}


def finished_runs(runs: Path, experiments: list[str] | None = None) -> list[Path]:
    """Finished run folders (``<experiment>/<dataset>/<split>/<run_name>``) under ``runs``."""
    found = sorted(p.parent for p in runs.rglob("metrics.json"))
    if experiments:
        found = [p for p in found if p.relative_to(runs).parts[0] in experiments]
    return [p for p in found if is_finished(p)]


@dataclass
class Published:
    """What one call of ``publish`` did: the record folders written, and the runs refused (a
    refused run's old record, if any, stays as it was)."""

    written: list[Path] = field(default_factory=list)
    refused: dict[Path, str] = field(default_factory=dict)  # run folder -> why


def publish(runs: Path, records: Path, experiments: list[str] | None = None,
            dry_run: bool = False) -> Published:
    """Copy every finished run into ``records``. A run whose record would be too large is
    refused and the others are still published. ``dry_run``: each record is built (trimmed) in a
    scratch folder and thrown away, so what would be published and what refused are exactly what
    a real call does; ``records`` is not touched."""
    done = Published()
    for run in finished_runs(runs, experiments):
        dest = records / run.relative_to(runs)
        scratch = Path(tempfile.mkdtemp(prefix="publish_dry_run_")) if dry_run else None
        tmp = scratch / dest.name if scratch else dest.with_name(f".{dest.name}.publishing")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for name in _RECORD_FILES:
                if (run / name).is_file():
                    shutil.copy2(run / name, tmp / name)
            if (run / "predictions.jsonl").is_file():
                try:
                    trimmed = publish_predictions(run / "predictions.jsonl", tmp / "predictions.jsonl")
                except ValueError as exc:
                    shutil.rmtree(tmp, ignore_errors=True)  # the old record stays as it was
                    done.refused[run] = str(exc)
                    continue
                if trimmed is not None:
                    write_json_atomic(tmp / "publish.json", trimmed)
            if not dry_run:
                shutil.rmtree(dest, ignore_errors=True)  # the record is replaced whole, never merged
                tmp.rename(dest)
            done.written.append(dest)
        finally:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiments", nargs="*", help="experiment names to publish (default: all)")
    ap.add_argument("--runs", default="runs", help="where runs write (paths.results_dir; default: runs)")
    ap.add_argument("--to", default="results", help="the committed records (default: results)")
    ap.add_argument("--dry-run", action="store_true",
                    help="build each record in a scratch folder: list what would be published or refused, write nothing")
    args = ap.parse_args(argv)
    runs, records = Path(args.runs), Path(args.to)
    if not runs.is_dir():
        print(f"publish_runs: {runs} does not exist: nothing has run yet", file=sys.stderr)
        return 1
    if runs.resolve() == records.resolve():
        print("publish_runs: --runs and --to are the same folder", file=sys.stderr)
        return 2
    done = publish(runs, records, args.experiments or None, args.dry_run)
    verb = "would publish" if args.dry_run else "published"
    for dest in done.written:
        print(f"{verb} {dest}")
    print(f"{verb} {len(done.written)} finished run(s) from {runs} to {records}"
          + ("" if args.dry_run else "; next: python scripts/make_tables.py"))
    for why in done.refused.values():
        print(f"publish_runs: refused: {why}", file=sys.stderr)
    if done.refused:
        print(f"publish_runs: {len(done.refused)} run(s) not published; their old records stay", file=sys.stderr)
    return 1 if done.refused else 0


if __name__ == "__main__":
    sys.exit(main())
