"""Write a filled table as Markdown and CSV, and the results/README.md index."""
from __future__ import annotations

import csv
import os
from pathlib import Path

from atomicrag.harness.report_tables.table import Cell, Column, TableResult

MISSING = "—"
MINUS = "\u2212"


def fmt(value: float | None, spec: str) -> str:
    if value is None:
        return MISSING
    text = format(value, spec)
    if text.lstrip("-").strip("0.,") == "":  # -0.0 -> 0.0
        text = text.lstrip("-")
    return text.replace("-", MINUS) if text.startswith("-") else text


def fmt_diff(value: float, spec: str) -> str:
    text = format(value, "+" + spec)
    if text[1:].strip("0.,") == "":
        text = "±" + text[1:]
    return text.replace("-", MINUS)


FIDELITY_TAG = {"reference_code": "ref", "paper": "paper", "custom": "custom", "mixed": "mixed"}
INSIDE = "✓"  # the published value lies inside the measured 95% interval


def measured_text(cell: Cell, col: Column) -> str:
    """``value [lo, hi] n=N fidelity`` (the parts that are known)."""
    text = fmt(cell.measured, col.fmt)
    if cell.measured is None:
        return text
    if cell.ci is not None:
        text += f" [{fmt(cell.ci[0], col.fmt)}, {fmt(cell.ci[1], col.fmt)}]"
    if cell.n is not None:
        text += f" n={cell.n}"
    if cell.fidelity:
        text += f" {FIDELITY_TAG.get(cell.fidelity, cell.fidelity)}"
    if cell.prompts == "own":  # not the released prompts: named beside the number
        text += " own prompts"
    return text


def cell_text(cell: Cell, col: Column) -> str:
    """``measured [95% CI] n fidelity (published, measured − published ✓)``; — marks a cell not
    measured yet. The difference is shown only for a cell measured under the published numbers'
    fidelity (reference_code); ✓ marks a published value inside the interval."""
    if not col.measured:
        return "" if cell.published is None else fmt(cell.published, col.fmt)
    if cell.published is None or col.published is False:
        return measured_text(cell, col)
    inner = fmt(cell.published, col.fmt)
    if cell.diff is not None:
        inner += f", {fmt_diff(cell.diff, col.fmt)}"
    if cell.measured is not None and cell.inside:
        inner += f" {INSIDE}"
    return f"{measured_text(cell, col)} ({inner})"


def column_title(result: TableResult, col: Column) -> str:
    """The column's title, with the number of questions when every measured cell shares it."""
    ns = {r.cells[col.key].n for r in result.rows if r.cells[col.key].measured is not None}
    if col.measured and len(ns) == 1 and None not in ns:
        return f"{col.title} (n={ns.pop()})"
    return col.title


def _rel(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:  # different drives on Windows
        return str(path)


def to_markdown(result: TableResult, out_dir: Path, png: Path | None = None) -> str:
    spec = result.spec
    done, total = result.measured_count()
    lines = [f"# {spec.title}", ""]
    lines.append(f"- **Measured:** {spec.measured_label}")
    source = f" (`paper_tables.json` → `tables.{spec.paper_key}`)" if spec.paper_key else ""
    lines.append(f"- **Published:** {spec.published_label}{source}")
    paired = any(c.measured and c.published is not False for c in spec.columns)
    layout = (f"`measured [95% CI] n=questions fidelity (published, measured {MINUS} published {INSIDE})`"
              if paired else "measured and published values in separate columns")
    lines.append(f"- **Cells:** {layout}; {MISSING} = not measured yet ({done}/{total} measured cells filled)")
    lines.append(f"- **Statistics:** 95% percentile bootstrap over questions (2,000 resamples; stratified by "
                 f"question type for Graph-Bench averages); drops use a paired bootstrap over the questions both "
                 f"runs scored. `ref` = `fidelity=reference_code` (what produced the published numbers), `paper` = "
                 f"the paper-text reading: a difference is printed only for `ref` cells; {INSIDE} = the published "
                 f"value lies inside the interval.")
    lines.append(f"- **Runs from:** experiment(s) {', '.join(f'`{e}`' for e in spec.experiments)}")
    if spec.readme:
        lines.append(f"- **How to regenerate:** `{spec.readme}`")
    lines.append("")
    header = [spec.row_header] + [column_title(result, c) for c in spec.columns]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * len(spec.columns)) + "|")
    for res in result.rows:
        cells = [cell_text(res.cells[c.key], c) for c in spec.columns]
        lines.append("| " + " | ".join([res.row.label] + cells) + " |")
    if png is not None:
        lines += ["", f"![{spec.name}]({_rel(png, out_dir)})"]
    runs = [(res.row.label, ds, run) for res in result.rows for ds, run in res.runs.items()]
    lines += ["", "## Runs used", ""]
    if runs:
        for label, ds, run in runs:
            lines.append(f"- {label} / {ds}: `{_rel(run.path, out_dir)}` — {run.describe()}")
    else:
        lines.append("- none yet: run the command in the README above, then `python scripts/make_tables.py`.")
    notes = list(spec.notes) + list(result.notes)
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def write_csv(result: TableResult, path: Path, out_dir: Path) -> None:
    """Wide CSV: per column its measured value, the published value and the difference."""
    spec = result.spec
    header = ["row"]
    for c in spec.columns:
        header += [f"{c.key}", f"{c.key}.published", f"{c.key}.diff", f"{c.key}.n", f"{c.key}.ci_lo",
                   f"{c.key}.ci_hi", f"{c.key}.fidelity", f"{c.key}.published_inside", f"{c.key}.prompts"]
    header.append("runs")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for res in result.rows:
            line: list[object] = [res.row.label]
            for c in spec.columns:
                cell = res.cells[c.key]
                ci = cell.ci or (None, None)
                inside = cell.inside
                line += [_num(cell.measured), _num(cell.published), _num(cell.diff),
                         "" if cell.n is None else cell.n, _num(ci[0]), _num(ci[1]), cell.fidelity or "",
                         "" if inside is None else int(inside), cell.prompts or ""]
            line.append(";".join(_rel(r.path, out_dir) for r in res.runs.values()))
            writer.writerow(line)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def write_index(entries: list[tuple[TableResult, dict[str, Path]]], results_dir: Path) -> Path:
    """results/README.md: one line per table with links to its Markdown, CSV and plot."""
    lines = [
        "# Results",
        "",
        "Generated by `python scripts/make_tables.py` from `results/<experiment>/<dataset>/<split>/<run>/metrics.json`.",
        ("Each table puts every measured cell beside the published number and the difference; "
        "`experiments/README.md` says how each is regenerated."),
        "",
        "| table | measured cells | files |",
        "|---|---:|---|",
    ]
    for result, files in entries:
        done, total = result.measured_count()
        links = " · ".join(f"[{kind}]({_rel(p, results_dir)})" for kind, p in files.items())
        lines.append(f"| {result.spec.title} | {done}/{total} | {links} |")
    path = results_dir / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path
