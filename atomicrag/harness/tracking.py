"""Run folders, run names, environment capture and the optional W&B sink.

A run writes ``<paths.results_dir>/<experiment>/<dataset>/<split>/<run_name>/`` (``runs/`` by
default, gitignored; ``scripts/publish_runs.py`` copies finished runs into the committed
``results/``): ``config.yaml`` (the resolved config), ``metrics.json``
(``harness.metrics_file.RunMetrics``: headline and per-type metrics, model ids, git commit,
environment, per-module time and tokens, failures) and ``predictions.jsonl`` (one trace per
question). Files are always written first, atomically; W&B only mirrors them.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from atomicrag.core.artifacts import content_hash, write_jsonl_atomic, write_text_atomic
from atomicrag.core.config import Config
from atomicrag.harness.metrics_file import RunMetrics, write_metrics
from atomicrag.harness.metrics_file import read_metrics as read_run_metrics

# fields that do not change what a run computes, so they do not enter its name
_NAME_EXCLUDE = {"run_name", "overwrite", "experiment_name", "row_label", "baselines", "paths", "logger",
                 "max_failure_rate", "retriever_preset"}


def config_hash(cfg: Config) -> str:
    d = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in _NAME_EXCLUDE}
    return content_hash(d, length=8)


@functools.lru_cache(maxsize=64)
def _preset_method(preset: str) -> str | None:
    """The ``retriever.name`` the conf/retriever option ``preset`` composes to (None: no such option)."""
    from atomicrag.core.compose import load_config

    try:
        return load_config({"retriever": preset}, env_prefix=None).retriever.name
    except ValueError:
        return None


def _retriever_part(cfg: Config) -> str:
    """The retriever preset the run composed (``hybrid``), unless the run changed its method
    (then the method: the folder must not name a preset that did not run)."""
    preset = getattr(cfg, "retriever_preset", None)
    if preset and _preset_method(preset) == cfg.retriever.name:
        return preset.replace("/", "-")
    return cfg.retriever.name


def _model_name(model: str) -> str:
    return model.split("/")[-1].replace(".", "_")


def run_name(cfg: Config) -> str:
    """Deterministic, readable: the retriever preset, the atomizer, the models that run (an LLM only
    when a stage or the judge calls one, the embedder only when one embeds), the two optional LLM
    modules, the fidelity preset, and a hash of everything else."""
    if cfg.run_name:
        return cfg.run_name
    from atomicrag.core.needs import needs

    graph = needs(cfg, "graph", ("retriever",))
    parts = [_retriever_part(cfg), cfg.atomizer.name if graph else "passages"]
    if needs(cfg, "embedder"):
        parts.append(_model_name(cfg.embedder.model))
    if needs(cfg, "llm"):
        parts.append(_model_name(cfg.llm.model) if cfg.llm.name != "fake" else "fake")
    parts += [f"aqd-{cfg.decompose.name}", f"as-{cfg.sieve.name}", cfg.fidelity.preset, config_hash(cfg)]
    return "_".join(parts)


def run_dir(cfg: Config) -> Path:
    return Path(cfg.paths.results_dir) / cfg.experiment_name / cfg.dataset.name / cfg.dataset.split / run_name(cfg)


def is_finished(path: Path) -> bool:
    """A run folder whose metrics.json says it finished (a failed run is re-run, see failures.py)."""
    from atomicrag.engine.failures import run_is_finished

    if not (path / "metrics.json").is_file():
        return False
    try:
        return run_is_finished(read_metrics(path))
    except ValueError:  # a damaged metrics.json (MetricsFileError is one): the run is redone, not reused
        return False


def write_run(
    path: Path,
    cfg: Config,
    metrics: RunMetrics,
    predictions: list[dict[str, Any]],
) -> None:
    """Write predictions, config, then metrics.json last: its ``status`` says whether the run finished."""
    path.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(path / "predictions.jsonl", predictions)
    write_text_atomic(path / "config.yaml", OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    write_metrics(path, metrics)


def read_metrics(path: Path) -> dict[str, Any]:
    """A run folder's metrics.json as plain data, checked against the schema (``MetricsFileError``)."""
    return read_run_metrics(path).to_dict()


class WandbSink:
    """Mirror of a finished run in W&B (offline mode works without network): the composed config,
    the headline and per-type metrics as the run's summary, a ``stages`` table (per module: calls,
    tokens, LLM latency, wall time), a ``vs_published`` table (every paper-table cell this run
    fills, measured beside the published number, as ``make_tables`` computes it) and a
    ``predictions`` table (one row per question). The group is the experiment folder (``table2``):
    a sweep's rows, and a table's ablations, sit side by side in one group."""

    def __init__(self, cfg: Config) -> None:
        import os

        import wandb  # optional dependency: pip install 'atomicrag-harness[wandb]'

        os.environ.setdefault("WANDB_SILENT", "true")
        self._wandb = wandb
        self.run = wandb.init(
            project=cfg.logger.project,
            mode=cfg.logger.mode,
            name=run_name(cfg),
            group=cfg.experiment_name,
            job_type=cfg.dataset.name,
            config=dataclasses.asdict(cfg),
            dir=str(Path(cfg.paths.results_dir).resolve().parent / "wandb"),
            reinit=True,
        )

    def log_run(self, metrics: dict[str, Any], predictions: list[dict[str, Any]],
                run_folder: Path | None = None) -> None:
        flat = {k: v for k, v in _flatten(metrics).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        self.run.summary.update(flat)
        tables = {"stages": self._table(STAGE_COLUMNS, stage_rows(metrics))}
        if run_folder is not None:
            tables["vs_published"] = self._table(PUBLISHED_COLUMNS, published_cells(run_folder, metrics))
        columns = ["question_id", "question", "answer", "gold", "em", "f1"]
        tables["predictions"] = self._table(columns, [
            [p.get("question_id"), p.get("question"), p.get("answer"), "; ".join(p.get("gold", [])),
             p.get("em"), p.get("f1")] for p in predictions])
        self.run.log(tables)

    def _table(self, columns: list[str], rows: list[list[Any]]) -> Any:
        table = self._wandb.Table(columns=columns)
        for row in rows:
            table.add_data(*row)
        return table

    def finish(self) -> None:
        self.run.finish()


STAGE_COLUMNS = ["stage", "calls", "prompt_tokens", "completion_tokens", "llm_latency_s", "wall_s"]
PUBLISHED_COLUMNS = ["table", "row", "column", "measured", "published", "measured_minus_published", "fidelity"]


def stage_rows(metrics: dict[str, Any]) -> list[list[Any]]:
    """Per-module cost of a run (metrics.json ``cost.modules``), one row per stage that did work."""
    rows = []
    for stage, m in sorted((metrics.get("cost") or {}).get("modules", {}).items()):
        if m.get("calls") or m.get("wall_s"):
            rows.append([stage, m.get("calls"), m.get("prompt_tokens"), m.get("completion_tokens"),
                         m.get("llm_latency_s"), m.get("wall_s")])
    return rows


def published_cells(run_folder: Path, metrics: dict[str, Any]) -> list[list[Any]]:
    """Every cell of a declared paper table (conf/experiment/**/*.table.yml) that the run in
    ``run_folder`` fills, in the run's headline metric: measured beside published, as
    ``scripts/make_tables.py`` would print it (the difference only where the fidelity is the
    published numbers', as there)."""
    import json

    from atomicrag.harness.report_tables import TABLES, build, find_paper_tables, load_runs

    runs = load_runs(run_folder)
    if not runs:
        return []
    paper = json.loads(find_paper_tables().read_text())
    metric = (metrics.get("headline") or {}).get("name") or "acc"
    out = []
    for name, spec_of in TABLES.items():
        result = build(spec_of(metric), runs, paper, {})
        for res in result.rows:
            if not res.runs:
                continue  # a row this run does not fill
            for col in result.spec.columns:
                cell = res.cells[col.key]
                # the run's own cells, and the row's published-only cells (the paper's number beside them)
                mine = col.derive is None and cell.measured is not None
                paper_only = not col.measured and cell.published is not None
                if mine or paper_only:
                    out.append([name, res.row.label, col.title, cell.measured, cell.published, cell.diff, cell.fidelity])
    return out


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "/"))
        else:
            out[key] = v
    return out
