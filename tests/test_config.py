"""Configuration: every group file composes, bad values fail early with a clear message."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from atomicrag.core.compose import load_config
from atomicrag.core.config import Config, register_configs, to_dataclass

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"

register_configs()
GROUPS = [p for p in sorted(CONF_DIR.iterdir()) if p.is_dir() and p.name != "experiment"]


def _options() -> list[tuple[str, str]]:
    return [(g.name, f.stem) for g in GROUPS for f in sorted(g.glob("*.yaml"))]


@pytest.mark.parametrize(("group", "option"), _options())
def test_every_group_file_composes_and_validates(group: str, option: str) -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        # ablations (what removing a component changes) are appended, not chosen among defaults;
        # a preset (a whole system) replaces the root's quickstart one
        plus = "+" if group == "ablation" else ""
        composed = compose("config", overrides=[f"{plus}{group}={option}"])
    cfg = to_dataclass(composed)
    assert isinstance(cfg, Config)
    # every value the composition produced reaches the dataclass the code reads (none dropped or
    # renamed on the way: a field the dataclass loses is a setting that silently does nothing)
    lost = [(path, want, got) for path, want, got in _leaves(OmegaConf.to_container(composed, resolve=True), cfg)
            if _norm(want) != _norm(got)]
    assert not lost, f"{group}={option}: composed values that the dataclass does not hold: {lost[:5]}"


def _norm(v: object) -> object:
    return [_norm(x) for x in v] if isinstance(v, (list, tuple)) else v


def _leaves(node: object, obj: object, path: str = "") -> list[tuple[str, object, object]]:
    """(dotted path, composed value, dataclass value) for every leaf of the composed config."""
    if isinstance(node, dict):
        if not dataclasses.is_dataclass(obj) and not isinstance(obj, dict):
            return [(path, node, obj)]
        out = []
        for k, v in node.items():
            child = obj.get(k, _MISSING) if isinstance(obj, dict) else getattr(obj, k, _MISSING)
            out += _leaves(v, child, f"{path}.{k}" if path else str(k))
        return out
    return [(path, node, obj)]


_MISSING = object()


def test_typo_in_override_fails_at_composition() -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        with pytest.raises(Exception, match="retriever.dampng"):
            compose("config", overrides=["retriever.dampng=0.5"])


def test_closed_choice_is_checked() -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["retriever.name=pagerank"])
    with pytest.raises(ValueError, match="RetrieverConfig.name='pagerank'"):
        to_dataclass(cfg)


def test_fidelity_presets_differ_in_every_documented_switch() -> None:
    """``fidelity=`` sets the switches of every stage section (conf/fidelity/*.yaml: _global_)."""
    from atomicrag.harness.differences import switches

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        paper = to_dataclass(compose("config", overrides=["fidelity=paper"]))
        code = to_dataclass(compose("config", overrides=["fidelity=reference_code"]))
    assert (paper.fidelity.preset, code.fidelity.preset) == ("paper", "reference_code")
    differing = {name for section, name in switches()
                 if getattr(getattr(paper, section), name) != getattr(getattr(code, section), name)}
    assert {
        "damping_semantics", "atom_seeding", "containment_keys", "relevance_weight",
        "synonym_overwrites_relevance", "sieve_target", "merge", "decompose_trigger",
        "acc_weight", "acc_similarity", "embed_pooling",
    } <= differing


def test_a_moved_switch_keeps_its_old_spelling(tmp_path, monkeypatch) -> None:
    """A switch that moved from ``fidelity`` to its stage's section is still read under its old
    name: in a dict or file source, in an override, in an environment variable."""
    from atomicrag.core.config_moves import MOVED_FIELDS, move_override

    assert MOVED_FIELDS[("fidelity", "containment_keys")] == "graph"
    assert move_override("fidelity.containment_keys=raw") == "graph.containment_keys=raw"
    assert move_override("+fidelity.preset=custom") == "+fidelity.preset=custom"  # not moved
    assert load_config({"fidelity": {"containment_keys": "raw"}}).graph.containment_keys == "raw"
    # the new name wins over the old one in one source
    both = {"fidelity": {"containment_keys": "raw"}, "graph": {"containment_keys": "canonical"}}
    assert load_config(both).graph.containment_keys == "canonical"
    assert load_config(overrides=["fidelity.containment_keys=raw"]).graph.containment_keys == "raw"
    monkeypatch.setenv("ATOMICRAG_FIDELITY__CONTAINMENT_KEYS", "raw")
    assert load_config(None).graph.containment_keys == "raw"


def test_load_config_from_dict_json_yaml_and_env(tmp_path, monkeypatch) -> None:
    cfg = load_config({"retriever": {"damping": 0.5}, "llm": {"name": "fake"}})
    assert cfg.retriever.damping == 0.5
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"sieve": {"name": "llm"}}))
    assert load_config(path).sieve.name == "llm"
    ypath = tmp_path / "c.yaml"
    ypath.write_text("retriever:\n  top_k: 7\n")
    assert load_config(ypath).retriever.top_k == 7
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__TOP_K", "9")
    assert load_config(ypath).retriever.top_k == 9  # the environment is applied last


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"retriever": {"topk": 3}}, "topk"),
        ({"retriever": {"top_k": "many"}}, "top_k"),
        ({"retriever": {"damping": 1.5}}, "damping"),
        ({"nonsense": 1}, "nonsense"),
    ],
)
def test_load_config_rejects_unknown_keys_and_bad_values(source: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(source)


def test_bad_json_file_names_the_file(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{\"retriever\": ")
    with pytest.raises(ValueError, match="broken.json"):
        load_config(path)


def test_every_mode_is_declared_once_as_a_literal_and_checked() -> None:
    """A mode's choices are written once (``mode(Literal[...], default)``); a value outside them
    fails naming the class, the field and the value, for every mode of every section."""
    import atomicrag.core.config as config_module
    from atomicrag.core.checks import modes

    sections = [c for c in vars(config_module).values() if dataclasses.is_dataclass(c) and isinstance(c, type)]
    found = {(c.__name__, f) for c in sections for f in modes(c)}
    assert len(found) >= 30 and ("RetrieverConfig", "damping_semantics") in found
    for cls in sections:
        for name in modes(cls):
            with pytest.raises(ValueError, match=f"{cls.__name__}.{name}='bogus'"):
                cls(**{name: "bogus"})
