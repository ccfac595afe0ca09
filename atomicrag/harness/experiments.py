"""Composing a committed experiment (``conf/experiment/<folder>/<name>.yaml``) the one way.

An experiment's ``experiment_name`` (its results folder, ``results/<experiment_name>/...``, and the
table it fills) is the folder its file lives in: ``+experiment=table2/medical_wo_ka`` runs under
``table2``. No experiment file states it; the entry point (:mod:`atomicrag.harness.run`) and
everything that composes an experiment outside it (tests, scripts) derive it here, so the two
cannot disagree. An explicit ``experiment_name=...`` on the command line still wins.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from omegaconf import DictConfig

EXPERIMENT_GROUP = "experiment"


def folder_of(choice: str) -> str:
    """``'table2/medical_wo_ka'`` -> ``'table2'``: the experiment_name of an experiment choice."""
    return choice.split("/", 1)[0]


def experiment_choice(choices: Mapping[str, str | None]) -> str | None:
    """The experiment Hydra chose, as ``<folder>/<name>``, from its runtime choices: both
    ``+experiment=table2/medical_full`` (choice ``experiment``) and the READMEs' folder sweeps
    ``'+experiment/table2=glob(*)'`` (choice ``experiment/table2``) select one."""
    for key, value in choices.items():
        if value and key == EXPERIMENT_GROUP:
            return value
        if value and key.startswith(EXPERIMENT_GROUP + "/"):
            return f"{key.split('/', 1)[1]}/{value}"
    return None


def name_experiment(cfg: DictConfig, choice: str | None, overrides: Sequence[str] = (),
                    retriever_choice: str | None = None) -> DictConfig:
    """``cfg`` with ``experiment_name`` set from the experiment ``choice`` (Hydra's runtime choice
    of the ``experiment`` group), unless there is none or ``overrides`` set the name explicitly,
    and ``retriever_preset`` from Hydra's choice of the ``retriever`` group (names the run folder)."""
    explicit = any(o.lstrip("+~").split("=", 1)[0] == "experiment_name" for o in overrides)
    if choice and not explicit:
        cfg.experiment_name = folder_of(choice)
    if retriever_choice and "retriever_preset" in cfg and cfg.retriever_preset is None:
        cfg.retriever_preset = retriever_choice
    return cfg


def compose_experiment(name: str | None, overrides: Sequence[str] = ()) -> DictConfig:
    """The config ``python -m atomicrag.run +experiment=<name> <overrides...>`` runs (``name=None``:
    the root config, the quickstart). Uses the Hydra context the caller initialised, else
    initialises one on ``conf/`` for the call."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from atomicrag.core.compose import CONF_DIR
    from atomicrag.core.config import move_override, register_configs

    register_configs()
    overrides = [move_override(o) for o in overrides]
    from omegaconf import open_dict

    args = ([f"+{EXPERIMENT_GROUP}={name}"] if name else []) + list(overrides)
    if GlobalHydra.instance().is_initialized():
        cfg = compose("config", overrides=args, return_hydra_config=True)
    else:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=args, return_hydra_config=True)
    retriever_choice = cfg.hydra.runtime.choices.get("retriever")
    with open_dict(cfg):
        del cfg["hydra"]  # what `python -m atomicrag.run` hands its task: the config without Hydra's own
    return name_experiment(cfg, name, overrides, retriever_choice)
