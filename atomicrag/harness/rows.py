"""What the rows of a table switch: the baseline rows a run can add (``Config.baselines``) and
the paper's ablations (Table 2).

Data only: the harness's row labels (``harness/pipeline``), the baselines it runs
(:mod:`atomicrag.harness.baselines`) and its config's checks (``HarnessConfig.baselines``) read it.

Ablations are defined once, as the Hydra config group ``conf/ablation/``: a file
``<component>[_<variant>].yaml`` says what removing that component changes (``override /<group>:
<preset>`` lines and field values). Experiments include them (``- /ablation: [ergr, aqd]``);
:func:`ablation` reads the same files, so the harness's row labels (``harness/pipeline.row_label``)
match what the experiments run; make_tables' rows are the experiment files themselves
(``conf/experiment/table2/table2.table.yml``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from atomicrag.core.compose import CONF_DIR, group_config

# The ablated components in the paper's order (Table 2's labels): conf/ablation/<key>[_<variant>].yaml
COMPONENTS: dict[str, str] = {"ergr": "ERGR", "aqd": "AQD", "as": "AS", "ka": "KA"}
# Table 2's rows, top to bottom: the components each removes
TABLE2_ROWS: tuple[tuple[str, ...], ...] = (
    (), ("ergr",), ("aqd",), ("as",), ("ka",), ("ergr", "aqd"), ("ergr", "aqd", "as"), ("ergr", "aqd", "as", "ka"))


@dataclass(frozen=True)
class Ablation:
    name: str  # the file: "ka_chunk"
    component: str  # what it removes: "ka"
    changes: dict[str, Any]  # dotted config field -> the value it sets ("retriever.name": "dense")


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@cache
def ablation(name: str) -> Ablation:
    """``conf/ablation/<name>.yaml`` as the fields it sets: a preset it selects counts as that
    preset's ``name`` (``override /retriever: dense`` -> ``retriever.name: dense``)."""
    component = name.split("_", 1)[0]
    path = CONF_DIR / "ablation" / f"{name}.yaml"
    if component not in COMPONENTS or not path.is_file():
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ablation_names())}")
    return Ablation(name, component, _changes(path))


def _changes(path: Path) -> dict[str, Any]:
    """The fields a preset or ablation file sets: each group option it selects counts as that
    option's ``name`` (``override /retriever: dense`` -> ``retriever.name: dense``); a whole preset
    it extends (``- /preset/paper``) is not a change of its own."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    changes: dict[str, Any] = {}
    for entry in data.pop("defaults", []):
        if not isinstance(entry, dict):
            continue
        ((key, option),) = entry.items()  # "override /retriever: dense"
        group = key.removeprefix("override").strip().lstrip("/")
        changes[f"{group}.name"] = group_config(group, option).name
    changes.update(_flatten(data))
    return changes


@cache
def preset_changes(name: str) -> dict[str, Any]:
    """``conf/preset/<name>.yaml``'s own changes (``vanilla_rag``: dense passage retrieval, no
    decomposition or sieve), so a system is defined once, by its preset file."""
    return _changes(CONF_DIR / "preset" / f"{name}.yaml")


def ablation_names() -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / "ablation").glob("*.yaml"))


def ablation_label(components: Sequence[str]) -> str:
    """Table 2's row label: ``()`` -> "AtomicRAG", ``("ka",)`` -> "w/o KA",
    ``("ergr", "aqd")`` -> "w/o {ERGR, AQD}"."""
    names = [COMPONENTS[c] for c in COMPONENTS if c in components]
    if not names:
        return "AtomicRAG"
    return f"w/o {names[0]}" if len(names) == 1 else "w/o {" + ", ".join(names) + "}"


def ablated(get: Callable[[str], Any]) -> list[str]:
    """The components (paper order) a config removes: those with a variant whose every change it
    holds. ``get`` reads a dotted field of the config."""
    by_component: dict[str, list[Ablation]] = {}
    for name in ablation_names():
        a = ablation(name)
        by_component.setdefault(a.component, []).append(a)
    return [c for c in COMPONENTS
            if any(all(get(k) == v for k, v in a.changes.items()) for a in by_component.get(c, []))]

BASELINES: dict[str, dict[str, Any]] = {
    # vanilla RAG (conf/preset/vanilla_rag.yaml): dense retrieval over passages, same reader and LLM
    "dense_passage": preset_changes("vanilla_rag"),
    # AtomicRAG without the graph (paper's w/o ERGR, conf/ablation/ergr.yaml): atoms ranked by similarity alone
    "dense_atoms": ablation("ergr").changes,
}




def baseline_reads(name: str) -> tuple[str, ...]:
    """The retriever fields baseline ``name``'s retriever reads (derived from the variant's declared
    reads, its registration's ``reads=``), in field order; the others are reset to their defaults."""
    import dataclasses

    from atomicrag.core.config import RetrieverConfig
    from atomicrag.core.registry import RETRIEVERS

    variant = BASELINES[name]["retriever.name"]
    read = RETRIEVERS.reads(variant)
    if read is None:
        raise ValueError(f"baseline {name!r}: retriever {variant!r} declares no fields it reads")
    return tuple(f.name for f in dataclasses.fields(RetrieverConfig) if f.name in read)
