"""One composer for every way of configuring atomicrag: Hydra's compose API over ``conf/``.

The research harness composes ``conf/config.yaml`` through ``@hydra.main`` (and a committed
experiment outside a run, ``harness.experiments.compose_experiment``, through :func:`compose` with
``root=HARNESS_ROOT``); the library, the ``atomicrag`` command line, ``ATOMICRAG_*``
environment variables and the scripts turn what they are given into a list of Hydra overrides and compose ``conf/library.yaml`` (the ``Config`` schema and
its groups; the harness's root adds its own schema, ``HarnessConfig``, and the ``judge``, ``logger``
and ``preset`` groups) with it. So there is one grammar (Hydra's override
syntax), one place a default lives (the dataclasses of ``core/config.py``; a group file holds only
what differs, and may extend another file of its group with ``defaults:``), and one code path that
resolves a group option such as ``retriever=hybrid``.

A dict source maps to overrides like this:

    {"retriever": "ppr"}                                   -> retriever=ppr
    {"retriever": {"option": "ppr", "top_k": 10}}          -> retriever=ppr retriever.top_k=10
    {"retriever": {"top_k": 10}}                           -> retriever.top_k=10
    ATOMICRAG_LLM=fake  ATOMICRAG_RETRIEVER__TOP_K=3       -> llm=fake retriever.top_k=3 (applied last)

``fidelity`` has a field named ``preset`` (its label): a value naming a file of ``conf/fidelity/``
selects that file, any other value stays a label. Elsewhere "preset" means a whole system
(``conf/preset/``, the harness's): ``{"retriever": {"preset": ...}}`` is an error naming ``option``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from atomicrag.core.config import Config, register_configs, to_dataclass
from atomicrag.core.config_moves import drop_removed, move_overrides

OPTION_KEY = "option"  # the dict-source key that names a group option: {"retriever": {"option": "ppr"}}
LIBRARY_ROOT = "library"  # conf/library.yaml: the library's root (Config schema + conf/groups.yaml)
GROUPS_FILE = "groups"  # conf/groups.yaml: the default option of each group, shared by both roots
HARNESS_ROOT = "config"  # conf/config.yaml: the research harness's (HarnessConfig; judge, logger, preset)
_OPTION_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
# Hydra's GlobalHydra is process-wide state: one composition at a time.
_LOCK = threading.RLock()


def _find_conf_dir() -> Path:
    """``conf/`` inside the installed package (a wheel maps it there), else the checkout's top level."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / f"{LIBRARY_ROOT}.yaml").is_file():
            return candidate
    raise FileNotFoundError(
        f"atomicrag's configuration (conf/{LIBRARY_ROOT}.yaml) is neither in {package / 'conf'} nor in "
        f"{package.parent / 'conf'}; reinstall atomicrag (pip install atomicrag, or pip install -e . "
        "in a checkout)")


CONF_DIR = _find_conf_dir()


@lru_cache(maxsize=1)
def config_groups() -> tuple[str, ...]:
    """The groups of the library's defaults list (conf/groups.yaml), one per dataclass section of
    ``Config`` (``tests/test_compose.py`` holds the two lists equal)."""
    import yaml

    data = yaml.safe_load((CONF_DIR / f"{GROUPS_FILE}.yaml").read_text(encoding="utf-8")) or {}
    return tuple(str(next(iter(item))) for item in data.get("defaults", []) if isinstance(item, dict))


def option_names(group: str) -> list[str]:
    """The files of ``conf/<group>/`` by name (``retriever`` -> ``[bfs, dense, ..., ppr, ...]``)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def has_option(group: str, name: Any) -> bool:
    return isinstance(name, str) and bool(_OPTION_NAME.match(name)) and (CONF_DIR / group / f"{name}.yaml").is_file()


# ---- values in Hydra's override grammar -------------------------------------------------------

def encode_value(value: Any) -> str:
    """``value`` written in Hydra's override grammar so that composing gives it back unchanged:
    strings are quoted (so ``'1'``, ``'null'`` and ``'a: b, c'`` stay strings), with quotes,
    the backslashes before them and interpolation markers (``${``) escaped."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        text = re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", value)  # literal ${, not interpolation
        text = re.sub(r"(\\+)(?=')|(\\+)$", lambda m: m.group(0) * 2, text)  # backslashes before a quote
        return "'" + text.replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{encode_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} as a config value: {value!r}")


def _leaves(data: Mapping[str, Any], prefix: str) -> Iterable[str]:
    for key, value in data.items():
        if not isinstance(key, str):
            raise ValueError(f"config keys are names, got {key!r} under {prefix.rstrip('.') or 'the top level'}")
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}={encode_value(value)}"


def selection(group: str, value: Any) -> tuple[str | None, Any]:
    """``(group option named by value or None, the value without that name)`` for one group entry."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, Mapping) and OPTION_KEY in value:
        return value[OPTION_KEY], {k: v for k, v in value.items() if k != OPTION_KEY}
    if isinstance(value, Mapping) and "preset" in value:
        if group == "fidelity":  # its own label field: a file name selects, anything else is a label
            name = value["preset"]
            return (name if has_option(group, name) else None), value
        # "preset" means a whole system (conf/preset/); a group's option is named by "option"
        raise ValueError(f"{group}.preset: name a {group} option with {{'{OPTION_KEY}': {value['preset']!r}}}")
    return None, value


def section_groups() -> tuple[str, ...]:
    """Every group whose option fills one config section: the library's (conf/groups.yaml) and the
    harness root's own (judge, logger). Naming one the root does not have fails at composition."""
    skip = {"experiment", "ablation", "preset", "hydra"}  # whole systems or additions, not a section
    return tuple(sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name not in skip))


def to_overrides(source: Mapping[str, Any]) -> list[str]:
    """A nested dict (library, CLI ``--config`` file, saved index) as Hydra overrides: group
    options first (``retriever=ppr``), then one ``a.b=value`` per leaf."""
    groups = set(section_groups())
    options, fields = [], []
    for key, value in source.items():
        if key in groups:
            name, value = selection(key, value)
            if name is not None:
                if not has_option(key, name):
                    raise ValueError(f"unknown {key} option {name!r}; known: {', '.join(option_names(key))}")
                options.append(f"{key}={name}")
        if isinstance(value, Mapping) and value:
            fields.extend(_leaves(value, f"{key}."))
        elif not (key in groups and value == {}):  # {"no_such_group": {}} is still an unknown key
            fields.append(f"{key}={encode_value(value)}")
    return options + fields


def options_named(overrides: Sequence[str]) -> set[str]:
    """The groups whose option an override list selects (``retriever=ppr`` -> ``{"retriever"}``)."""
    groups = set(section_groups())
    return {o.split("=", 1)[0].lstrip("+~") for o in overrides if o.split("=", 1)[0].lstrip("+~") in groups}


def rebase(base: Sequence[str], overrides: Sequence[str]) -> list[str]:
    """``overrides`` applied over ``base`` (e.g. a saved index's full config): a group whose option
    ``overrides`` selects starts again from that option instead of keeping ``base``'s fields."""
    fresh = options_named(overrides)
    kept = [o for o in base if o.split("=", 1)[0].split(".", 1)[0].lstrip("+~") not in fresh]
    return kept + list(overrides)


# ``ATOMICRAG_*`` variables that are switches of the code, not config settings
ENV_FLAGS = frozenset({
    "NO_PROGRESS",  # no progress bars
    "STATE_DIR",  # where `atomicrag serve` keeps its record
    "AUTO_PRECISION",  # what embedder.precision=auto picks (bf16 | fp32)
    "VLLM_PYTHON",  # the vLLM server's interpreter
    "RELEASED_CODE",  # the released checkout (fidelity.released_code)
    "ONNX_DIR",  # where ONNX exports of embedders are kept
    "HF_CACHE",  # where converted GGUF -> HF model folders are kept
    "STRICT_ENV",  # an unknown ATOMICRAG_* variable is an error, not a warning
    "SHARED_DATA", "DOC_COMMANDS_ALL",  # the test suite's own switches
})


def _known_env_names() -> list[str]:
    names = [*ENV_FLAGS, *(g.upper() for g in config_groups())]
    for f in dataclasses.fields(Config):
        sub = f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
        if dataclasses.is_dataclass(sub):
            names += [f"{f.name}__{g.name}".upper() for g in dataclasses.fields(sub)]
        else:
            names.append(f.name.upper())
    return names


def check_env_names(environ: Mapping[str, str], prefix: str) -> None:
    """Warn about an ``ATOMICRAG_*`` variable that is neither a setting nor a flag, naming the
    nearest valid spelling (``ATOMICRAG_RETRIEVER_TOP_K`` -> ``ATOMICRAG_RETRIEVER__TOP_K``);
    with ``ATOMICRAG_STRICT_ENV=1`` it is an error. ``GROUP__FIELD`` names are checked by the
    composition itself (an unknown field fails there, naming it)."""
    import difflib
    import warnings

    known = None
    for key in sorted(environ):
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):].upper()
        if "__" in name or name in ENV_FLAGS or name.lower() in config_groups():
            continue
        known = known or _known_env_names()
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {prefix}{near[0]}?" if near else (
            f"; settings are {prefix}<GROUP>__<FIELD> (two underscores) or {prefix}<GROUP>=<option>")
        message = f"{key} is not an atomicrag setting and is ignored{hint}"
        if environ.get(f"{prefix}STRICT_ENV", "") not in ("", "0"):
            raise ValueError(message + f" ({prefix}STRICT_ENV is set)")
        warnings.warn(message, UserWarning, stacklevel=3)


def env_overrides(environ: Mapping[str, str], prefix: str) -> list[str]:
    """``ATOMICRAG_<GROUP>=<option>`` and ``ATOMICRAG_<GROUP>__<FIELD>=<value>`` variables as
    overrides; values are in Hydra's grammar as typed. The code's own switches (``ENV_FLAGS``,
    e.g. ``ATOMICRAG_NO_PROGRESS``) are not config; any other name is warned about."""
    check_env_names(environ, prefix)
    groups = set(config_groups())
    out = []
    for key in sorted(environ):
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):].lower()
        if "__" in name:
            out.append(f"{name.replace('__', '.')}={environ[key]}")
        elif name in groups:
            out.append(f"{name}={environ[key]}")
    return out


# ---- composing ---------------------------------------------------------------------------------

def compose(overrides: Sequence[str] = (), *, root: str = LIBRARY_ROOT, hydra_config: bool = False) -> Any:
    """``conf/<root>.yaml`` composed with ``overrides`` (Hydra's compose API), as a DictConfig
    typed by the ``Config`` schema. Works inside a running Hydra application too (the harness):
    its global state is put aside and restored. ``hydra_config=True`` keeps Hydra's own ``hydra``
    node (its runtime choices name the experiment and retriever picked; see
    :func:`atomicrag.harness.experiments.compose_experiment`)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    register_configs()
    with _LOCK:
        backup = get_gh_backup()
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                return hydra_compose(config_name=root, overrides=move_overrides(overrides, sections=root_sections(root)),
                                     return_hydra_config=hydra_config)
        finally:
            restore_gh_from_backup(backup)


def root_sections(root: str) -> frozenset[str] | None:
    """The top-level names of ``root``'s schema where they are narrower than any (the library's
    ``Config``: no judge), else None. An old spelling that moved to a section the root lacks is
    dropped there (``core.config_moves.move_fields``)."""
    return frozenset(f.name for f in dataclasses.fields(Config)) if root == LIBRARY_ROOT else None


def group_config(group: str, name: str) -> Any:
    """The dataclass section that ``conf/<group>/<name>.yaml`` gives (with what it extends):
    ``group_config("retriever", "hybrid").damping``."""
    from omegaconf import OmegaConf

    if group not in config_groups() and not (CONF_DIR / group).is_dir():
        raise ValueError(f"{group!r} is not a config group; groups: {', '.join(config_groups())}")
    if not has_option(group, name):
        raise ValueError(f"unknown {group} option {name!r}; known: {', '.join(option_names(group))}")
    # only the section: building the whole Config would run checks that themselves read options.
    # A group the library's root does not have (the harness's judge, logger, preset) composes over
    # the harness's root.
    root = LIBRARY_ROOT if group in default_options() else HARNESS_ROOT
    return OmegaConf.to_object(compose([f"{group}={name}"], root=root)[group])


def default_options() -> dict[str, str]:
    """``{group: option}`` of the library's defaults list."""
    import yaml

    data = yaml.safe_load((CONF_DIR / f"{GROUPS_FILE}.yaml").read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for item in data.get("defaults", []) if isinstance(item, dict)
            for k, v in item.items()}


# ---- the library's entry point ---------------------------------------------------------------

def load_config(source: Config | dict | str | Path | None = None, *, env_prefix: str | None = "ATOMICRAG_",
                overrides: Sequence[str] = (), root: str = LIBRARY_ROOT) -> Config:
    """Validate a config given as a dataclass, dict, JSON/YAML file path, or None (defaults).

    Every source becomes a list of Hydra overrides composed over ``conf/library.yaml``
    (``atomicrag.core.compose``): the defaults are that file's group options (MiniLM, ``hybrid``,
    the default LLM), a group can be named by option: ``{"llm": "fake"}`` or
    ``{"retriever": {"option": "ppr", "top_k": 10}}``. ``overrides`` are Hydra override strings
    (``retriever.top_k=10``, the CLI's ``--set``) applied after the source. Environment variables
    ``ATOMICRAG_<GROUP>__<FIELD>=value`` (double underscore between levels) and
    ``ATOMICRAG_<GROUP>=<option>`` are applied last (``env_prefix=None``: not at all). Unknown keys
    and badly typed values raise ``ValueError`` naming the key (and the file). ``root=HARNESS_ROOT``
    composes the research harness's root instead (its ``HarnessConfig``: run folders, baselines,
    judge, logger; the quickstart preset unless the source names another).
    """
    where = f" ({source})" if isinstance(source, (str, Path)) else ""
    try:
        if isinstance(source, Config):
            data: dict[str, Any] = dataclasses.asdict(source)
            if root == LIBRARY_ROOT:  # a subclass (the harness's) keeps only the library's fields
                data = {f.name: data[f.name] for f in dataclasses.fields(Config)}
        elif isinstance(source, dict):
            data = drop_removed(source, sections=root_sections(root))
        elif isinstance(source, (str, Path)):
            data = drop_removed(read_config_file(source), sections=root_sections(root))
        elif source is None:
            data = {}
        else:
            raise TypeError(f"config source must be Config, dict, path or None, not {type(source).__name__}")
        listed = to_overrides(data)
        env = env_overrides(os.environ, env_prefix) if env_prefix else []
        return to_dataclass(compose(rebase(rebase(listed, list(overrides)), env), root=root))
    except TypeError:
        raise
    except Exception as exc:  # hydra and omegaconf raise several error types; give one clear message
        raise ValueError(f"invalid atomicrag config{where}: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    """Hydra wraps the schema's error in its own; keep the innermost message that names the key."""
    inner = exc
    while inner.__cause__ is not None and str(inner.__cause__):
        inner = inner.__cause__
    text = str(inner) if str(inner) else str(exc)
    text = " ".join(line.strip() for line in text.splitlines()  # OmegaConf's own type lines say nothing new
                    if line.strip() and not line.strip().startswith(("reference_type=", "object_type=")))
    outer = str(exc).splitlines()[0].rstrip(".:") if str(exc) else ""
    return text if inner is exc or not outer or outer in text else f"{outer}: {text}"


def read_config_file(source: str | Path) -> dict[str, Any]:
    """A YAML or JSON config file as a dict; every problem names the file."""
    import yaml

    path = Path(source)
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: config file is not UTF-8 text ({exc.reason})") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ValueError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config file must hold a mapping of groups (e.g. 'retriever: {{top_k: 10}}'), "
                         f"not a {type(data).__name__}")
    return data
