"""Moving files and folding configuration into presets must not change what an experiment runs.

``tests/golden/composed_experiments.json`` holds every experiment (and the root config) as Hydra
composed it before the package was split into layers: the resolved config, name -> values. Each is
composed again now and must be equal, value for value. A deliberate change of an experiment's
values regenerates the file (and says why in its commit):

    .venv/bin/python tests/test_composed_golden.py --write
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("hydra")
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from atomicrag.core.config import register_configs

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
GOLDEN = Path(__file__).resolve().parent / "golden" / "composed_experiments.json"
ROOT_KEY = "<root>"


def compose_all(names: list[str]) -> dict[str, dict]:
    register_configs()
    out = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for name in names:
            overrides = [] if name == ROOT_KEY else [f"+experiment={name}"]
            out[name] = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
    return out


def experiment_names() -> list[str]:
    files = sorted((CONF / "experiment").rglob("*.yaml"))
    return [ROOT_KEY, *(str(p.relative_to(CONF / "experiment").with_suffix("")) for p in files)]


def _diff(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _diff(a.get(k, "<absent>"), b.get(k, "<absent>"),
                                                                  f"{path}.{k}" if path else k)]
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]


def test_every_experiment_composes_to_its_recorded_values() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = compose_all(sorted(golden))
    problems = {name: _diff(golden[name], now[name]) for name in golden}
    problems = {k: v[:5] for k, v in problems.items() if v}
    assert not problems, json.dumps(problems, indent=1)[:6000]


def test_the_golden_file_covers_every_experiment() -> None:
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(experiment_names())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(json.dumps(compose_all(experiment_names()), sort_keys=True, separators=(",", ":")))
        print(f"wrote {GOLDEN}")
