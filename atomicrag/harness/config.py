"""The research harness's configuration: the library's ``Config`` plus what only a harness run reads.

A run folder (``experiment_name``, ``run_name``), the paper-table row it fills (``row_label``),
rows computed beside it (``baselines``), its judge and logger, and the failure threshold that
makes it exit non-zero. ``conf/config.yaml`` composes over this schema (``harness_config``);
``conf/library.yaml`` over ``Config``, so a library user never sees these fields.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from atomicrag.core import checks
from atomicrag.core.config import Config, JudgeConfig


@dataclass
class LoggerConfig:
    name: str = "none"  # none | wandb
    project: str = "atomicrag"
    mode: str = "offline"  # wandb mode: offline | online

    def __post_init__(self) -> None:
        checks.choice(self, "name", ("none", "wandb"))
        checks.choice(self, "mode", ("offline", "online", "disabled"))
        checks.text(self, "project", nonempty=True)


@dataclass
class HarnessConfig(Config):
    experiment_name: str = "quickstart"  # results/<experiment_name>/... (the group +experiment=... sets it)
    run_name: str | None = None  # default: derived from the config, deterministic
    # the conf/retriever option the run composed (Hydra's choice, set by the harness): the run
    # folder is named by it (hybrid, ppr_minilm, ...) rather than by the propagation method
    retriever_preset: str | None = None
    row_label: str | None = None  # the paper-table row this run fills (set by experiment files; read by make_tables)
    overwrite: bool = False  # re-run a finished run
    baselines: list[str] = field(default_factory=list)  # extra rows computed in the same run
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    # failed LLM requests (per module), failed questions or failed chunks above this fraction make
    # the run exit non-zero and stay unfinished (a re-run retries them); 0 = any failure does
    max_failure_rate: float = 0.0
    # print the run plan (LLM calls, tokens, cost, GPU memory per stage; atomicrag/harness/plan.py)
    # and stop before loading any model; a real run prints it first and records it in metrics.json
    plan: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        from atomicrag.harness.rows import BASELINES  # data only; imported late, rows reads conf/

        checks.path_name(self, "experiment_name", "run_name", "retriever_preset")  # folders of results/
        checks.text(self, "row_label")  # free text: a paper-table row label
        checks.unit(self, "max_failure_rate")
        checks.mark(self, ("baselines",))
        bad = [b for b in self.baselines if b not in BASELINES]
        if bad:
            raise ValueError(f"HarnessConfig.baselines: unknown {bad}; known: {', '.join(BASELINES)}")


def load_harness_config(source: Config | dict | str | None = None, *, overrides: Sequence[str] = (),
                        preset: str | None = None) -> HarnessConfig:
    """A harness config from the library's sources (dict, JSON/YAML file, Config; ``load_config``)
    plus the harness's own fields, composed over ``conf/config.yaml``. No whole-system preset
    unless ``preset`` names one (``python -m atomicrag.run`` starts from ``quickstart``)."""
    from atomicrag.core.compose import HARNESS_ROOT, load_config

    chosen = [f"preset={preset}"] if preset else ["~preset"]
    cfg = load_config(source, root=HARNESS_ROOT, overrides=[*chosen, *overrides])
    assert isinstance(cfg, HarnessConfig)
    return cfg
