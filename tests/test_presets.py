"""Library defaults are conf/config.yaml's presets; presets by name in every config source."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from atomicrag.core.config import Config, load_config, register_configs, to_dataclass
from atomicrag.core.presets import CONF_DIR, default_presets, load_preset

register_configs()


def _hydra_default() -> Config:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return to_dataclass(compose("config"))


def test_library_defaults_equal_the_harness_defaults_except_the_dataset() -> None:
    lib, harness = load_config(), _hydra_default()
    # conf/preset/quickstart.yaml (the root defaults list's preset) holds quickstart-only values
    # (e.g. sieve.max_context, the reader's budget for the 135M model): the harness applies them,
    # the library keeps the group presets' values there
    quickstart = {k: v for k, v in yaml.safe_load((CONF_DIR / "preset" / "quickstart.yaml").read_text()).items()
                  if isinstance(v, dict) and k in default_presets()}
    assert quickstart  # the test checks something: the quickstart does set group fields
    for group in default_presets():
        fields = quickstart.get(group, {})
        ours = dataclasses.replace(getattr(harness, group), **{f: getattr(getattr(lib, group), f) for f in fields})
        assert getattr(lib, group) == ours, group
        for field, value in fields.items():  # the harness does apply them
            assert getattr(getattr(harness, group), field) == value, (group, field)
            assert getattr(getattr(lib, group), field) != value, (group, field)
    assert "preset" not in default_presets()  # a whole system, not a Config section
    assert "dataset" not in default_presets() and lib.dataset == Config().dataset
    # the real offline setup, never the fakes
    assert lib.embedder.name != "fake" and lib.llm.name != "fake"
    assert lib.embedder.model == "minilm"


def test_defaults_follow_conf_config_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Changing a default preset in conf/config.yaml changes the library's default."""
    from atomicrag.core import presets

    conf = tmp_path / "conf"
    for group in ("retriever", "llm", "embedder"):
        (conf / group).mkdir(parents=True)
        for f in (CONF_DIR / group).glob("*.yaml"):
            (conf / group / f.name).write_text(f.read_text())
    data = yaml.safe_load((CONF_DIR / "config.yaml").read_text())
    data["defaults"] = ["base_config", {"retriever": "dense"}, {"llm": "fake"}, {"embedder": "minilm"}, "_self_"]
    (conf / "config.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setattr(presets, "CONF_DIR", conf)
    presets._defaults_list.cache_clear()
    presets._read_cached.cache_clear()
    try:
        cfg = load_config()
        assert (cfg.retriever.name, cfg.llm.name, cfg.embedder.name) == ("dense", "fake", "sentence_transformers")
    finally:
        presets._defaults_list.cache_clear()
        presets._read_cached.cache_clear()


def test_presets_by_name_in_dict_json_yaml_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ppr = load_preset("retriever", "ppr")
    cfg = load_config({"retriever": "ppr", "llm": "fake", "embedder": "fake"})
    assert (cfg.llm.name, cfg.embedder.name, cfg.embedder.dim) == ("fake", "fake", 64)
    # naming a preset replaces the default one: ppr is the schema defaults plus ppr.yaml
    assert dataclasses.asdict(cfg.retriever) == {**dataclasses.asdict(Config().retriever), **ppr}

    cfg = load_config({"retriever": {"preset": "dense", "top_k": 10}})
    assert (cfg.retriever.name, cfg.retriever.top_k) == ("dense", 10)
    # fields without a preset apply over the default preset
    default = load_preset("retriever", default_presets()["retriever"])
    cfg = load_config({"retriever": {"top_k": 10}})
    assert cfg.retriever.top_k == 10 and all(getattr(cfg.retriever, k) == v for k, v in default.items())

    j = tmp_path / "c.json"
    j.write_text(json.dumps({"llm": "smollm2", "retriever": {"preset": "ppr"}}))
    assert load_config(j).llm.model_path == "smollm2" and load_config(j).retriever.damping == 0.3
    y = tmp_path / "c.yaml"
    y.write_text("embedder: fake\nretriever:\n  preset: bfs\n  top_k: 3\n")
    assert (load_config(y).embedder.name, load_config(y).retriever.name, load_config(y).retriever.top_k) == \
        ("fake", "bfs", 3)

    monkeypatch.setenv("ATOMICRAG_LLM", "fake")
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__PRESET", "katz")
    cfg = load_config(y)  # the environment is applied last
    assert (cfg.llm.name, cfg.retriever.name, cfg.retriever.top_k) == ("fake", "katz", 3)


def test_fidelity_preset_field_selects_a_file_or_stays_a_label() -> None:
    code = load_config({"fidelity": {"preset": "reference_code"}}).fidelity
    assert code == load_config({"fidelity": "reference_code"}).fidelity
    assert code.merge == "string_dedupe" and code.preset == "reference_code"
    custom = load_config({"fidelity": {"preset": "custom", "merge": "string_dedupe"}}).fidelity
    assert custom.preset == "custom" and custom.merge == "string_dedupe" and custom.atom_seeding == "topk"


@pytest.mark.parametrize(("source", "message"), [
    ({"retriever": "pprx"}, r"unknown retriever preset 'pprx'; known: .*ppr_minilm"),
    ({"llm": {"preset": "../llm/fake"}}, "unknown llm preset"),
    ({"retriever": {"preset": "ppr", "topk": 3}}, "topk"),
])
def test_bad_preset_names_are_errors(source: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(source)


def test_a_full_config_object_round_trips() -> None:
    cfg = load_config({"retriever": "ppr", "llm": "fake"})
    assert load_config(cfg) == cfg and load_config(dataclasses.asdict(cfg)) == cfg
    assert load_config(Config()) == Config()  # a Config object is complete: no default preset leaks in


def test_query_time_overrides_on_a_saved_config_can_name_presets() -> None:
    from atomicrag.core.presets import override

    saved = dataclasses.asdict(load_config({"retriever": {"top_k": 7}}))
    cfg = load_config(override(saved, {"retriever": "dense"}))
    assert (cfg.retriever.name, cfg.retriever.top_k) == ("dense", 25)  # the preset, not the saved fields
    cfg = load_config(override(saved, {"retriever": {"top_k": 3}, "sieve": {"max_context": 5}}))
    assert (cfg.retriever.top_k, cfg.retriever.damping, cfg.sieve.max_context) == (3, saved["retriever"]["damping"], 5)


def test_config_groups_are_the_dataclass_sections_of_config() -> None:
    """presets reads the groups from conf/config.yaml's defaults list (core must not import the
    config module it serves); that list names every dataclass section of Config, no more."""
    import dataclasses

    from atomicrag.core.config import Config
    from atomicrag.core.presets import config_groups

    sections = {f.name for f in dataclasses.fields(Config)
                if dataclasses.is_dataclass(f.default_factory() if callable(f.default_factory) else f.default)}
    assert set(config_groups()) == sections
