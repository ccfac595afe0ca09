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
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atomicrag.harness.tracking import is_finished

# what a run folder holds that is a record (temporary files of a crashed write are not)
_RECORD_FILES = ("config.yaml", "metrics.json", "predictions.jsonl")


def finished_runs(runs: Path, experiments: list[str] | None = None) -> list[Path]:
    """Finished run folders (``<experiment>/<dataset>/<split>/<run_name>``) under ``runs``."""
    found = sorted(p.parent for p in runs.rglob("metrics.json"))
    if experiments:
        found = [p for p in found if p.relative_to(runs).parts[0] in experiments]
    return [p for p in found if is_finished(p)]


def publish(runs: Path, records: Path, experiments: list[str] | None = None,
            dry_run: bool = False) -> list[Path]:
    """Copy every finished run into ``records``; returns the record folders written."""
    written = []
    for run in finished_runs(runs, experiments):
        dest = records / run.relative_to(runs)
        written.append(dest)
        if dry_run:
            continue
        tmp = dest.with_name(f".{dest.name}.publishing")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in _RECORD_FILES:
            if (run / name).is_file():
                shutil.copy2(run / name, tmp / name)
        shutil.rmtree(dest, ignore_errors=True)  # the record is replaced whole, never merged
        tmp.rename(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiments", nargs="*", help="experiment names to publish (default: all)")
    ap.add_argument("--runs", default="runs", help="where runs write (paths.results_dir; default: runs)")
    ap.add_argument("--to", default="results", help="the committed records (default: results)")
    ap.add_argument("--dry-run", action="store_true", help="list what would be copied, copy nothing")
    args = ap.parse_args(argv)
    runs, records = Path(args.runs), Path(args.to)
    if not runs.is_dir():
        print(f"publish_runs: {runs} does not exist: nothing has run yet", file=sys.stderr)
        return 1
    if runs.resolve() == records.resolve():
        print("publish_runs: --runs and --to are the same folder", file=sys.stderr)
        return 2
    written = publish(runs, records, args.experiments or None, args.dry_run)
    verb = "would publish" if args.dry_run else "published"
    for dest in written:
        print(f"{verb} {dest}")
    print(f"{verb} {len(written)} finished run(s) from {runs} to {records}"
          + ("" if args.dry_run else "; next: python scripts/make_tables.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
