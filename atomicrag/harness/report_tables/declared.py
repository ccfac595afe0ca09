"""Paper tables as declared beside their experiments: ``conf/experiment/<folder>/<table>.table.yml``.

A declaration says what the table shows; the experiments say what runs. Each row names the
experiment files that fill it (``table1/medical_rag``), or a sweep file whose grid
(``hydra.sweeper.params``) gives one row per point; a run fills the row when it was made by that
experiment: its ``experiment`` (the folder) and its recorded ``row_label`` (the file's, a sweep's
resolved per point) are the row's. Nothing matches runs on config values, and no row, grid or
label is restated in Python; columns name their extractors and derivations (:mod:`.computed`).
Hydra never reads the ``.yml`` files (only ``.yaml`` are config options), so a folder glob
(``'+experiment/table2=glob(*)'``) still selects experiments only.

Every field is checked on load; a bad one raises :class:`TableDeclarationError` naming the file
and the field.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from atomicrag.core.compose import CONF_DIR
from atomicrag.harness.report_tables import computed
from atomicrag.harness.report_tables.table import Column, Row, TableSpec

SUFFIX = ".table.yml"
TOP = {"title": str, "paper_key": (str, type(None)), "readme": str, "row_header": str, "metric": str,
       "measured_label": str, "published_label": str, "notes": list, "dataset": str, "plot": (str, dict),
       "published_rows": dict, "experiments": list, "rows": list, "columns": list}
REQUIRED = ("title", "published_label", "rows", "columns")
ROW = {"runs": (str, list), "sweep": str, "label": str, "dataset": str, "modules": list}
COLUMN = {"key": str, "title": str, "extract": (str, dict), "derive": dict, "dataset": str, "measured": bool,
          "published": (bool, dict), "comparable": bool, "fmt": str}
GROUP = {"graphbench": str, "dataset": str, "title_prefix": str}
GB_COLS = [("fact", "Fact"), ("reason", "Reason"), ("summ", "Summ."), ("creat", "Creat."), ("avg", "Avg.")]


class TableDeclarationError(ValueError):
    """A table declaration that cannot be built; the message names the file and the field."""


def experiment_dir(conf_dir: Path | None = None) -> Path:
    return (conf_dir or CONF_DIR) / "experiment"


def declaration_files(conf_dir: Path | None = None) -> dict[str, Path]:
    """``{table name: declaration file}`` for every ``conf/experiment/*/<name>.table.yml``."""
    found: dict[str, Path] = {}
    for path in sorted(experiment_dir(conf_dir).glob(f"*/*{SUFFIX}")):
        name = path.name[: -len(SUFFIX)]
        if name in found:
            raise TableDeclarationError(f"{path}: table {name!r} is also declared in {found[name]}")
        found[name] = path
    return dict(sorted(found.items(), key=lambda kv: _paper_order(kv[0], kv[1])))


def _paper_order(name: str, path: Path) -> tuple[Any, ...]:
    """Tables in the paper's order, then figures; a table's variants after it, those compared with
    published numbers first (table2, table2_smoke, table2_retrieval)."""
    m = re.match(r"([a-z]+?)(\d+)", name)
    kind, number = (m.group(1), int(m.group(2))) if m else (name, 0)
    return (kind != "table", number, name != f"{kind}{number}", not load(path).get("paper_key"), name)


# ------------------------------------------------------------------------------ experiment files
@dataclasses.dataclass(frozen=True)
class Point:
    """One run an experiment file makes: its folder, recorded row label and sweep value."""
    experiment: str  # the folder: the run's ``experiment``
    label: str
    field: str | None = None  # the swept field (sweep files): ``retriever.damping``
    value: Any = None  # its value at this point


def _fail(path: Path, where: str, what: str) -> TableDeclarationError:
    return TableDeclarationError(f"{path}: {where}: {what}")


@cache
def experiment_points(name: str, conf_dir: Path | None = None) -> tuple[Point, ...]:
    """The runs ``conf/experiment/<name>.yaml`` makes: one, or one per point of its sweep grid."""
    path = experiment_dir(conf_dir) / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    label = data.get("row_label")
    if not isinstance(label, str) or not label:
        raise _fail(path, "row_label", "expected the paper-table row this experiment fills (a string)")
    params = ((data.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    folder = name.split("/", 1)[0]
    if not params:
        if "${" in label:
            raise _fail(path, "row_label", "interpolates a field but the file sweeps nothing")
        return (Point(folder, label),)
    if len(params) != 1:
        raise _fail(path, "hydra.sweeper.params", f"a table sweep varies one field, got {sorted(params)}")
    ((field, values),) = params.items()
    points = []
    for text in str(values).split(","):
        value = yaml.safe_load(text.strip())  # Hydra's reading of a plain sweep value: 0.1, 25
        cfg = OmegaConf.create({"row_label": label})
        OmegaConf.update(cfg, field, value, force_add=True)
        points.append(Point(folder, str(cfg.row_label), field, value))
    return tuple(points)


# ------------------------------------------------------------------------------ checking fields
def _check(path: Path, where: str, data: Any, fields: dict[str, Any], required: tuple[str, ...] = ()) -> dict:
    if not isinstance(data, dict):
        raise _fail(path, where, f"expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise _fail(path, f"{where}.{unknown[0]}".lstrip("."), f"unknown field (known: {', '.join(fields)})")
    for key in required:
        if key not in data:
            raise _fail(path, f"{where}.{key}".lstrip("."), "missing (required)")
    for key, value in data.items():
        if not isinstance(value, fields[key]):
            kinds = fields[key] if isinstance(fields[key], tuple) else (fields[key],)
            raise _fail(path, f"{where}.{key}".lstrip("."),
                        f"expected {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    return data


def _call(path: Path, where: str, spec: Any, registry: dict[str, Any]) -> tuple[str, list, dict]:
    """``name`` | ``{name: arg}`` | ``{name: [args]}`` | ``{name: {kwargs}}`` -> (name, args, kwargs)."""
    if isinstance(spec, str):
        name, args = spec, None
    elif isinstance(spec, dict) and len(spec) == 1:
        ((name, args),) = spec.items()
    else:
        raise _fail(path, where, f"expected a name or {{name: arguments}}, got {spec!r}")
    if name not in registry:
        raise _fail(path, where, f"unknown {name!r} (known: {', '.join(registry)})")
    if args is None:
        return name, [], {}
    if isinstance(args, dict):
        return name, [], args
    return name, list(args) if isinstance(args, list) else [args], {}


def load(path: Path) -> dict[str, Any]:
    """The checked declaration in ``path``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise TableDeclarationError(f"{path}: not YAML ({exc})") from None
    return _check(path, "", data, TOP, REQUIRED)


# ------------------------------------------------------------------------------ building a spec
def _rows(path: Path, decl: dict[str, Any], conf_dir: Path | None) -> list[Row]:
    rows: list[Row] = []
    for i, entry in enumerate(decl["rows"]):
        where = f"rows[{i}]"
        entry = {"runs": entry} if isinstance(entry, (str, list)) else entry
        _check(path, where, entry, ROW)
        if ("runs" in entry) == ("sweep" in entry):
            raise _fail(path, where, "name either 'runs' (experiment files) or 'sweep' (a sweep file)")
        names = [entry["sweep"]] if "sweep" in entry else entry["runs"]
        names = [names] if isinstance(names, str) else names
        points: list[tuple[Point, ...]] = []
        for name in names:
            try:
                points.append(experiment_points(str(name), conf_dir))
            except FileNotFoundError as exc:
                raise _fail(path, f"{where}.{'sweep' if 'sweep' in entry else 'runs'}",
                            f"no experiment file {exc.args[0]}") from None
        dataset = entry.get("dataset", decl.get("dataset"))
        modules = tuple(entry["modules"]) if "modules" in entry else None
        if "sweep" in entry:
            if len(points[0]) < 2 or "label" in entry:
                raise _fail(path, where, f"sweep {names[0]!r} must sweep a field and take its labels from it")
            for p in points[0]:
                x = float(p.value) if isinstance(p.value, (int, float)) else None
                rows.append(Row(p.label, dataset=dataset, x=x, sources=((p.experiment, p.label),), modules=modules))
            continue
        if any(len(ps) != 1 for ps in points):
            raise _fail(path, f"{where}.runs", "a sweep file is a 'sweep' row, not a run")
        labels = {ps[0].label for ps in points}
        if len(labels) != 1 and "label" not in entry:
            raise _fail(path, f"{where}.runs", f"the files fill different rows {sorted(labels)}: give 'label'")
        sources = tuple(dict.fromkeys((ps[0].experiment, ps[0].label) for ps in points))
        rows.append(Row(entry.get("label") or labels.pop(), dataset=dataset, sources=sources, modules=modules))
    labels = [r.label for r in rows]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise _fail(path, "rows", f"two rows share the label {dup[0]!r}")
    return rows


def _extractor(path: Path, where: str, spec: Any, ctx: computed.Context) -> tuple[Callable, bool]:
    name, args, kwargs = _call(path, where, spec, computed.EXTRACTORS)
    factory, metric_at = computed.EXTRACTORS[name]
    try:
        extract = factory(ctx, *args, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise _fail(path, where, f"{name}: {exc}") from None
    return extract, metric_at is not None and len(args) <= metric_at and "metric" not in kwargs


def _columns(path: Path, decl: dict[str, Any], rows: list[Row], metric: str) -> list[Column]:
    cols: list[Column] = []
    comparable: dict[str, bool] = {}
    for i, entry in enumerate(decl["columns"]):
        where = f"columns[{i}]"
        if isinstance(entry, dict) and "graphbench" in entry:  # the five Graph-Bench columns of one dataset
            _check(path, where, entry, GROUP, ("graphbench",))
            prefix, title = entry["graphbench"], entry.get("title_prefix", "")
            entries = [{"key": f"{prefix}.{k}", "title": f"{title}{t}", "extract": {"graphbench": k},
                        **({"dataset": entry["dataset"]} if "dataset" in entry else {})} for k, t in GB_COLS]
        else:
            entries = [entry]
        for e in entries:
            _check(path, where, e, COLUMN, ("key", "title"))
            col = Column(e["key"], e["title"], dataset=e.get("dataset"), measured=e.get("measured", True),
                         fmt=e.get("fmt", ".1f"))
            follows = False
            if "extract" in e:
                ctx = computed.Context(metric)
                name = _call(path, f"{where}.extract", e["extract"], computed.EXTRACTORS)[0]
                given = e["extract"][name] if isinstance(e["extract"], dict) else None
                # no modules of its own: each row's (Table 7's rows are modules of one run)
                if name in computed.ROW_MODULES and not (isinstance(given, dict) and "modules" in given):
                    for row in rows:
                        row.extract[col.key], _ = _extractor(path, f"{where}.extract", e["extract"],
                                                             computed.Context(metric, row.modules))
                else:
                    col.extract, follows = _extractor(path, f"{where}.extract", e["extract"], ctx)
            if "derive" in e:
                name, args, kwargs = _call(path, f"{where}.derive", e["derive"], computed.DERIVATIONS)
                factory, reads = computed.DERIVATIONS[name]
                try:
                    col.derive, keys = factory(*args, **kwargs), reads(*args, **kwargs)
                except TypeError as exc:
                    raise _fail(path, f"{where}.derive", f"{name}: {exc}") from None
                missing = [k for k in keys if k not in comparable]
                if missing:
                    raise _fail(path, f"{where}.derive", f"reads column {missing[0]!r}, not declared before it")
                follows = not all(comparable[k] for k in keys)
            published = e.get("published", True)
            if isinstance(published, dict):
                name, args, kwargs = _call(path, f"{where}.published", published, computed.PUBLISHED)
                published = computed.PUBLISHED[name](*args, **kwargs)
            col.published = published
            # a value that follows the table's metric is compared with the published ACC only as ACC
            col.comparable = e.get("comparable", not (follows and metric != "acc"))
            comparable[col.key] = col.comparable
            if col.key in {c.key for c in cols}:
                raise _fail(path, f"{where}.key", f"column {col.key!r} declared twice")
            cols.append(col)
    return cols


def _published_rows(path: Path, declared: dict[str, Any], rows: list[Row]) -> Callable:
    """``published_rows``: the published cells of a figure that prints no table (checked here)."""
    labels = {r.label for r in rows}
    for label, cells in declared.items():
        where = f"published_rows.{label}"
        if label not in labels:
            raise _fail(path, where, f"no such row (rows: {', '.join(sorted(labels))})")
        if not isinstance(cells, dict):
            raise _fail(path, where, "expected {row: [table, row label], <column>: {text: [source, needle]}}")
        for key, value in cells.items():
            ok = (isinstance(value, list) and len(value) == 2 if key == "row"
                  else isinstance(value, dict) and list(value) == ["text"] and len(value["text"]) == 2)
            if not ok:
                raise _fail(path, f"{where}.{key}", "expected [table, row label] for 'row', else {text: [source, needle]}")
    return computed.published_cells(declared)


def spec(path: Path, metric: str | None = None, conf_dir: Path | None = None) -> TableSpec:
    """The table declared in ``path``, its measured cells in ``metric`` (a declared ``metric`` wins)."""
    decl = load(path)
    metric = decl.get("metric") or metric or "acc"
    name = path.name[: -len(SUFFIX)]
    rows = _rows(path, decl, conf_dir)
    cols = _columns(path, decl, rows, metric)
    plot = None
    if "plot" in decl:
        pname, args, kwargs = _call(path, "plot", decl["plot"], computed.PLOTS)
        plot = computed.PLOTS[pname](*args, **kwargs)
    published_rows = _published_rows(path, decl["published_rows"], rows) if "published_rows" in decl else None
    label = computed.metric_label(metric)
    notes = decl.get("notes", [])
    if not all(isinstance(n, str) for n in notes):
        raise _fail(path, "notes", "expected a list of strings")
    return TableSpec(
        name, decl["title"], decl.get("paper_key"), tuple(decl.get("experiments") or [path.parent.name]), rows, cols,
        decl.get("measured_label", "{metric_label}").replace("{metric_label}", label),
        decl["published_label"].replace("{metric_label}", label), notes=list(notes),
        published_rows=published_rows, plot=plot, readme=decl.get("readme", ""),
        row_header=decl.get("row_header", "Row"),
    )
