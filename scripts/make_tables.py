#!/usr/bin/env python
"""Turn results/**/metrics.json into the paper's tables: measured cells beside the published ones.

    python scripts/make_tables.py                         # every table and figure
    python scripts/make_tables.py --table table2          # one (repeat --table for more)
    python scripts/make_tables.py --table table2_smoke    # the CPU smoke ablation (F1/EM/recall)
    python scripts/make_tables.py --table table2 --metric f1   # runs made without the judge
    python scripts/make_tables.py --where llm.model=Qwen/Qwen2.5-14B-Instruct --where fidelity.preset=paper
    python scripts/make_tables.py --sweep multirun/2026-12-03/10-00-00   # any multirun: plot + table
    python scripts/make_tables.py --docs            # every table of figures in the docs, from its records
    python scripts/make_tables.py --docs --check    # rewrite nothing; exit 1 listing stale blocks

Writes results/tables/<table>.md and .csv (and .png for fig4, fig5, table12, table13) and the
index results/README.md. A cell reads `measured [95% CI] n=N fidelity (published, measured −
published ✓)`: the interval is a bootstrap over the run's questions (paired for drops), the
difference is printed only for cells measured under fidelity=reference_code (what produced the
published numbers), ✓ marks a published value inside the interval; — marks a cell with no run
yet. A run fills the row named by its config's row_label (experiments/README.md).

--docs renders the tables between `<!-- table: NAME -->` and `<!-- /table -->` in README.md, docs/,
experiments/ and results/ READMEs from the specs in docs/tables.yaml
(atomicrag/harness/report_tables/docs_tables.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atomicrag.harness.report_tables import TABLES, make_tables, parse_where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="results folder to scan (default: results)")
    parser.add_argument("--table", action="append", choices=sorted(TABLES), help="table(s) to build (default: all)")
    parser.add_argument("--metric", default="acc", choices=["acc", "f1", "em"],
                        help="what ACC-type cells hold: acc (judged, compared with the paper) or f1/em (not compared)")
    parser.add_argument("--out", default=None, help="output folder (default: <results>/tables)")
    parser.add_argument("--paper-tables", default=None, help="paper_tables.json (default: the copy in atomicrag/published)")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="keep only runs whose config has KEY=VALUE (dotted key, e.g. llm.model=gpt-4o-mini)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--sweep", action="append", default=[], metavar="DIR",
                        help="a multirun's sweep folder: plot its points (x = the swept number) with 95%% intervals "
                             "and print their table; writes DIR/sweep_<metric>.png and DIR/sweep_<metric>.md")
    parser.add_argument("--sweep-metric", default="auto",
                        help="the sweep's metric (auto: the first of acc, f1, em, recall@5, recall@2 every row has)")
    parser.add_argument("--docs", action="store_true", help="render the docs' tables from docs/tables.yaml")
    parser.add_argument("--check", action="store_true", help="with --docs: write nothing, exit 1 if a block is stale")
    args = parser.parse_args(argv)
    if args.docs:
        from atomicrag.harness.report_tables.docs_tables import main as render_docs

        return render_docs(check=args.check)
    if args.sweep:
        from atomicrag.core.artifacts import write_text_atomic
        from atomicrag.harness.report_tables.sweep_plot import plot_sweep

        for folder in args.sweep:
            try:
                png, table = plot_sweep(folder, args.sweep_metric)
            except ValueError as exc:
                print(f"make_tables: error: {exc}", file=sys.stderr)
                return 2
            write_text_atomic(png.with_suffix(".md"), table + "\n")
            print(f"{folder}: {png}, {png.with_suffix('.md')}\n{table}")
        if not args.table:
            return 0
    written = make_tables(
        args.results, tables=args.table, metric=args.metric, out_dir=args.out, paper_tables=args.paper_tables,
        where=parse_where(args.where), plots=not args.no_plots,
    )
    for name, files in written.items():
        print(f"{name}: " + ", ".join(str(p) for p in files.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
