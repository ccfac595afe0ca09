"""Named presets: the YAML files of ``conf/<group>/``, shared by Hydra and the library.

One source of defaults. ``conf/config.yaml``'s ``defaults:`` list picks a preset per group for
the research harness (``retriever: hybrid``, ``llm: vllm_cpu``, ``embedder: minilm``, ...);
``load_config`` (the library and the ``atomicrag`` command line) applies the same list, so
changing a default there changes it everywhere. Only the ``dataset`` group is left out of the
library's defaults: the library indexes the user's documents, not a benchmark.

A config names a preset the way Hydra does, in any source (dict, JSON, YAML, environment):

    {"retriever": "ppr"}                                   # the preset as it is
    {"retriever": {"preset": "ppr", "top_k": 10}}          # the preset, then field overrides
    {"retriever": {"top_k": 10}}                           # fields over the *default* preset
    ATOMICRAG_LLM=fake   ATOMICRAG_RETRIEVER__PRESET=ppr   # environment (applied last)

As with Hydra's ``retriever=ppr``, naming a preset replaces the group's default preset: the
group starts from the schema defaults plus that file. ``fidelity`` has a field called
``preset`` (its label); a value that names a file (``paper``, ``reference_code``) loads it, any
other value (``custom``) stays a label.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml


def _find_conf_dir() -> Path:
    """``conf/`` inside the installed package (a wheel maps it there), else the checkout's top level."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(
        f"atomicrag's presets (conf/config.yaml) are neither in {package / 'conf'} nor in "
        f"{package.parent / 'conf'}; reinstall atomicrag (pip install atomicrag, or pip install -e . "
        "in a checkout)")


CONF_DIR = _find_conf_dir()
PRESET_KEY = "preset"
# Groups the library takes from the defaults list; the dataset group names a benchmark to load.
_NOT_LIBRARY_DEFAULTS = frozenset({"dataset"})
# Entries of the defaults list that are not a section of Config: ``preset`` selects a whole system
# (conf/preset/: the quickstart by default, an experiment's paper or smoke system); its values are
# the harness's, so the library neither applies nor lists it.
_NOT_CONFIG_GROUPS = frozenset({"preset"})
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@lru_cache(maxsize=1)
def _defaults_list() -> tuple[tuple[str, str], ...]:
    path = CONF_DIR / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = []
    for item in data.get("defaults", []):
        if isinstance(item, dict):  # "- group: preset"; plain strings are base_config and _self_
            ((group, name),) = item.items()
            if str(group) not in _NOT_CONFIG_GROUPS:
                out.append((str(group), str(name)))
    return tuple(out)


def config_groups() -> tuple[str, ...]:
    """The config groups: every group of ``conf/config.yaml``'s defaults list (one per dataclass
    section of ``Config``; ``tests/test_presets.py`` holds the two lists equal)."""
    return tuple(g for g, _ in _defaults_list())


def default_presets() -> dict[str, str]:
    """``{group: preset}`` of ``conf/config.yaml``'s defaults list that the library applies."""
    return {g: n for g, n in _defaults_list() if g not in _NOT_LIBRARY_DEFAULTS}


def preset_names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def _has_preset(group: str, name: str) -> bool:
    return bool(_NAME.match(name)) and (CONF_DIR / group / f"{name}.yaml").is_file()


def load_preset(group: str, name: str) -> dict[str, Any]:
    """The fields of ``conf/<group>/<name>.yaml``; a clear error naming the known presets."""
    if group not in config_groups():
        raise ValueError(f"{group!r} is not a config group; groups: {', '.join(config_groups())}")
    if not isinstance(name, str) or not _has_preset(group, name):
        raise ValueError(f"unknown {group} preset {name!r}; known: {', '.join(preset_names(group))}")
    return _read(group, name)


@lru_cache(maxsize=64)
def _read_cached(group: str, name: str) -> str:
    return (CONF_DIR / group / f"{name}.yaml").read_text(encoding="utf-8")


def _read(group: str, name: str) -> dict[str, Any]:
    data = yaml.safe_load(_read_cached(group, name)) or {}
    if not isinstance(data, dict) or "defaults" in data:
        raise ValueError(f"conf/{group}/{name}.yaml is not a plain group preset (a mapping of fields)")
    return data


def _selection(group: str, value: Any) -> tuple[str | None, Any]:
    """``(preset named by value or None, value without the preset key)`` for one group entry."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, dict) and PRESET_KEY in value:
        name = value[PRESET_KEY]
        if group == "fidelity":  # its own label field: a file name selects, anything else is a label
            return (name if isinstance(name, str) and _has_preset(group, name) else None), value
        return name, {k: v for k, v in value.items() if k != PRESET_KEY}
    return None, value


def split_presets(layers: list[dict[str, Any]], env_presets: dict[str, str] | None = None,
                  *, defaults: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(preset layer, layers with preset names removed)``.

    The preset layer holds, per group, the file of the last preset named for it (layers in
    order, then ``env_presets``), else the default preset. Merge it under the layers.
    """
    groups = set(config_groups())
    chosen: dict[str, str] = default_presets() if defaults else {}
    out_layers = []
    for layer in layers:
        clean = dict(layer)
        for group, value in layer.items():
            if group not in groups:
                continue
            name, rest = _selection(group, value)
            if name is not None:
                chosen[group] = name
            clean[group] = rest
        out_layers.append(clean)
    chosen.update(env_presets or {})
    return {g: load_preset(g, n) for g, n in chosen.items()}, out_layers


def env_presets(environ: dict[str, str], prefix: str) -> dict[str, str]:
    """``ATOMICRAG_<GROUP>=<preset>`` variables (no double underscore) as ``{group: preset}``."""
    groups = set(config_groups())
    out = {}
    for key, value in environ.items():
        if key.startswith(prefix) and "__" not in key:
            group = key[len(prefix):].lower()
            if group in groups:
                out[group] = value
    return out


def preset_dicts(cfg: dict[str, Any]) -> dict[str, Any]:
    """``{"retriever": "ppr"}`` -> ``{"retriever": {"preset": "ppr"}}``, so that a preset name
    and field overrides from another source merge instead of replacing each other."""
    groups = set(config_groups())
    return {k: ({PRESET_KEY: v} if k in groups and isinstance(v, str) else v) for k, v in cfg.items()}


def override(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` deep-merged onto a full config dict (e.g. a saved index's): a group whose
    override names a preset starts again from that preset instead of keeping ``base``'s fields."""
    out = dict(base)
    for key, value in preset_dicts(overrides).items():
        named = isinstance(value, dict) and _selection(key, value)[0] is not None
        out[key] = value if named else _deep_merge(out.get(key), value)
    return out


def _deep_merge(base: Any, over: Any) -> Any:
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over
    return {**base, **{k: _deep_merge(base.get(k), v) for k, v in over.items()}}
