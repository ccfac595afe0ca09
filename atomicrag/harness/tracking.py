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
    """Mirror of a finished run in W&B (offline mode works without network)."""

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
            config=dataclasses.asdict(cfg),
            dir=str(Path(cfg.paths.results_dir).resolve().parent / "wandb"),
            reinit=True,
        )

    def log_run(self, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        flat = {k: v for k, v in _flatten(metrics).items() if isinstance(v, (int, float))}
        self.run.summary.update(flat)
        columns = ["question_id", "question", "answer", "gold", "em", "f1"]
        table = self._wandb.Table(columns=columns)
        for p in predictions:
            table.add_data(
                p.get("question_id"), p.get("question"), p.get("answer"),
                "; ".join(p.get("gold", [])), p.get("em"), p.get("f1"),
            )
        self.run.log({"predictions": table})

    def finish(self) -> None:
        self.run.finish()


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "/"))
        else:
            out[key] = v
    return out
