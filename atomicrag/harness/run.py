"""Hydra entry point of the research harness.

    python -m atomicrag.run                              # the quickstart (README)
    python -m atomicrag.run retriever=dense sieve=none   # any override
    python -m atomicrag.run -m +experiment=table2/medical_wo_ergr,table2/medical_wo_aqd   # several
    python -m atomicrag.run -m +experiment=table12/sweep  # a sweep file: every point of Table 12

Each configuration becomes one run folder (see atomicrag.harness.tracking); ``baselines`` adds rows
computed in the same process (e.g. the vanilla dense-passage RAG) and the comparison table is
printed at the end. Returns the headline metric so Hydra sweepers can optimise it.
"""
from __future__ import annotations

import logging
import os
import signal
import sys

import hydra
from omegaconf import DictConfig

from atomicrag.core.compose import CONF_DIR as COMPOSE_CONF_DIR
from atomicrag.core.compose import HARNESS_ROOT
from atomicrag.core.config import register_configs, to_dataclass

CONF_DIR = str(COMPOSE_CONF_DIR)
log = logging.getLogger("atomicrag")

register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name=HARNESS_ROOT)
def main(dcfg: DictConfig) -> float:
    # SIGTERM → SystemExit, so atexit handlers stop any LLM server this run launched
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.get().mode == RunMode.MULTIRUN:
        # a sweep's worker (joblib, submitit) takes one GPU of its own before anything starts CUDA;
        # the vLLM server a row launches inherits it (gpu_share.claim_worker_card)
        from atomicrag.harness.gpu_share import claim_worker_card

        claim_worker_card()

    from atomicrag.engine.failures import RunFailed, format_failures, raise_if_failed
    from atomicrag.harness.comparison import format_comparison
    from atomicrag.harness.experiments import experiment_choice, name_experiment
    from atomicrag.harness.pipeline import run_with_baselines

    hydra_cfg = HydraConfig.get()  # results/<experiment folder>/...: no experiment file states it
    name_experiment(dcfg, experiment_choice(hydra_cfg.runtime.choices), hydra_cfg.overrides.task,
                    hydra_cfg.runtime.choices.get("retriever"))
    cfg = to_dataclass(dcfg)
    from atomicrag.core.config_query import reader_variant, unread_reader_settings
    from atomicrag.core.registry import RETRIEVERS

    # a sweep over such a field changes nothing; a preset's seeding under a vanilla-RAG row is one
    # (info, not a warning: the published rows have them by construction)
    for setting in RETRIEVERS.unread_settings(cfg.retriever):
        log.info("retriever=%s does not read retriever.%s", cfg.retriever.name, setting)
    variant = reader_variant(cfg.reader, dataset_reader=cfg.dataset.reader, fidelity_preset=cfg.fidelity.preset)
    for setting in unread_reader_settings(cfg.reader, variant):
        log.info("reader %s does not read reader.%s", variant, setting)
    from atomicrag.core.hub_models import HubModelMissing, prepare_hub_access
    from atomicrag.engine.api import DatasetMissing, ReleasedCodeMissing, check_present, for_fidelity

    try:  # no data, no released checkout, or hub weights not cached: say so before any work starts
        check_present(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
        for_fidelity(cfg.fidelity)  # the published rows' first requirement, found without a network
        if getattr(cfg, "plan", False):  # a plan loads no model: a missing one is a line of it
            try:
                prepare_hub_access(cfg)
            except HubModelMissing as exc:
                print(f"plan: before the run: {exc}")
        else:
            prepare_hub_access(cfg)  # also switches the hub off when every model is local
    except (DatasetMissing, HubModelMissing, ReleasedCodeMissing) as exc:
        from hydra.types import RunMode

        if hydra_cfg.mode == RunMode.RUN:
            print(f"atomicrag: error: {exc}", file=sys.stderr)
            sys.exit(2)
        raise
    if getattr(cfg, "plan", False):  # the plan only: no model loads, nothing spent
        from atomicrag.harness.plan import plan_run

        try:
            print(plan_run(cfg).format())
        except ValueError as exc:
            print(f"atomicrag: error: {exc}", file=sys.stderr)
            sys.exit(2)
        return 0.0
    from hydra.types import RunMode

    from atomicrag.engine.api import LLMCacheDamagedError

    try:
        rows = run_with_baselines(cfg)
    except (LLMCacheDamagedError, OSError) as exc:  # the machine's or a file's fault: say which, one line
        if hydra_cfg.mode != RunMode.RUN:
            raise
        print(f"atomicrag: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        if hydra_cfg.mode != RunMode.RUN:
            raise
        print("atomicrag: interrupted; a re-run reuses the finished stages and answers", file=sys.stderr)
        sys.exit(130)
    print(format_comparison(rows))
    print("\n".join(format_failures(label, m) for label, m in rows))
    if hydra_cfg.mode == RunMode.MULTIRUN:  # the sweep's summary table reads it (harness/sweep_summary.py)
        from atomicrag.harness.sweep_summary import write_point

        write_point(hydra_cfg.runtime.output_dir, list(hydra_cfg.overrides.task), rows, cfg.paths.results_dir)
    try:
        raise_if_failed(rows)  # a run past cfg.max_failure_rate exits non-zero (and is not marked finished)
    except RunFailed as exc:
        from hydra.types import RunMode

        if hydra_cfg.mode == RunMode.RUN:  # one run: a clean message, exit status 1
            print(f"atomicrag: error: {exc}", file=sys.stderr)
            sys.exit(1)
        raise  # a sweep: Hydra runs the other jobs, then exits non-zero
    headline = rows[0][1].get("headline", {})
    return float(headline.get("value", 0.0) or 0.0)


if __name__ == "__main__":
    main()
