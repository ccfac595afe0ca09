"""One composer: the library, the CLI, environment variables and scripts become Hydra override
lists composed over conf/library.yaml; both it and the harness's root (conf/config.yaml) take
the group options of conf/groups.yaml."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atomicrag.core import compose as composer
from atomicrag.core.compose import (
    CONF_DIR,
    compose,
    config_groups,
    default_options,
    encode_value,
    group_config,
    load_config,
    to_overrides,
)
from atomicrag.core.config import Config, to_dataclass


def _harness_default() -> Config:
    return to_dataclass(compose(root="config"))


def test_library_defaults_equal_the_harness_defaults_except_the_quickstart_preset() -> None:
    lib, harness = load_config(), _harness_default()
    # conf/preset/quickstart.yaml (the harness root's preset) holds quickstart-only values (the
    # reader's budget for the 135M model, the sieve's context): the harness applies them, the
    # library keeps the group options' values there
    quickstart = {k: v for k, v in yaml.safe_load((CONF_DIR / "preset" / "quickstart.yaml").read_text()).items()
                  if isinstance(v, dict) and k in config_groups()}
    assert quickstart  # the test checks something: the quickstart does set group fields
    # conf/library.yaml's own overrides (its reader: the LLM chosen on real documents)
    library = {next(iter(d))[len("override "):]: next(iter(d.values()))
               for d in yaml.safe_load((CONF_DIR / "library.yaml").read_text())["defaults"]
               if isinstance(d, dict) and next(iter(d)).startswith("override ")}
    assert library == {"llm": "vllm_cpu_qwen05b"} and lib.llm == group_config("llm", "vllm_cpu_qwen05b")
    for group in default_options():
        if group in library:
            continue
        fields = quickstart.get(group, {})
        ours = dataclasses.replace(getattr(harness, group), **{f: getattr(getattr(lib, group), f) for f in fields})
        assert getattr(lib, group) == ours, group
        for field, value in fields.items():  # the harness does apply them
            assert getattr(getattr(harness, group), field) == value, (group, field)
            assert getattr(getattr(lib, group), field) != value, (group, field)
    assert "preset" not in config_groups()  # a whole system (harness only), not a Config section
    assert default_options()["dataset"] == "None" and lib.dataset == Config().dataset
    # the real offline setup, never the fakes; and the bare dataclasses are that same setup
    assert lib.embedder.name != "fake" and lib.llm.name != "fake" and lib.embedder.model == "minilm"
    assert Config().embedder == lib.embedder and Config().llm.model == harness.llm.model


def test_defaults_follow_conf_groups_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Changing a default option in conf/groups.yaml (the roots' shared list) changes the library's default."""
    conf = tmp_path / "conf"
    for group in config_groups():
        (conf / group).mkdir(parents=True)
        for f in (CONF_DIR / group).glob("*.yaml"):
            (conf / group / f.name).write_text(f.read_text())
    # the library root without its own reader override: the test is about conf/groups.yaml
    library = yaml.safe_load((CONF_DIR / "library.yaml").read_text())
    library["defaults"] = [d for d in library["defaults"] if not (isinstance(d, dict) and "override llm" in d)]
    (conf / "library.yaml").write_text(yaml.safe_dump(library))
    data = yaml.safe_load((CONF_DIR / "groups.yaml").read_text())
    data["defaults"] = [{"retriever": "dense"} if isinstance(d, dict) and "retriever" in d
                        else {"llm": "fake"} if isinstance(d, dict) and "llm" in d else d for d in data["defaults"]]
    (conf / "groups.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setattr(composer, "CONF_DIR", conf)
    cfg = load_config()
    assert (cfg.retriever.name, cfg.llm.name, cfg.embedder.name) == ("dense", "fake", "sentence_transformers")


def test_options_by_name_in_dict_json_yaml_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config({"retriever": "ppr", "llm": "fake", "embedder": "fake"})
    assert (cfg.llm.name, cfg.embedder.name, cfg.embedder.dim) == ("fake", "fake", 64)
    # naming an option replaces the default one: ppr is the schema defaults plus ppr.yaml
    assert cfg.retriever == group_config("retriever", "ppr") and cfg.retriever.damping == 0.3

    cfg = load_config({"retriever": {"option": "dense", "top_k": 10}})
    assert (cfg.retriever.name, cfg.retriever.top_k) == ("dense", 10)
    # fields without an option apply over the default option (hybrid: it extends ppr_minilm)
    cfg = load_config({"retriever": {"top_k": 10}})
    assert cfg.retriever == dataclasses.replace(group_config("retriever", "hybrid"), top_k=10)
    assert cfg.retriever.damping == group_config("retriever", "ppr_minilm").damping == 0.7

    j = tmp_path / "c.json"
    j.write_text(json.dumps({"llm": "smollm2", "retriever": {"option": "ppr"}}))
    assert load_config(j).llm.name == "llamacpp" and load_config(j).retriever.damping == 0.3
    y = tmp_path / "c.yaml"
    y.write_text("embedder: fake\nretriever:\n  option: bfs\n  top_k: 3\n")
    assert (load_config(y).embedder.name, load_config(y).retriever.name, load_config(y).retriever.top_k) == \
        ("fake", "bfs", 3)

    monkeypatch.setenv("ATOMICRAG_LLM", "fake")
    monkeypatch.setenv("ATOMICRAG_RETRIEVER", "katz")
    cfg = load_config(y)  # the environment is applied last; its option starts the group afresh
    assert (cfg.llm.name, cfg.retriever.name, cfg.retriever.top_k) == ("fake", "katz", 25)
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__TOP_K", "4")
    assert load_config(y).retriever.top_k == 4
    assert load_config(y, env_prefix=None).retriever.name == "bfs"


def test_hydra_override_strings_apply_after_the_source() -> None:
    """The CLI's --set and scripts: Hydra's own grammar, the same as `python -m atomicrag.run`."""
    cfg = load_config({"retriever": {"top_k": 7}}, overrides=["retriever.damping=0.2", "sieve=llm",
                                                               "embedder.query_prefix='q: a, b'"])
    assert (cfg.retriever.top_k, cfg.retriever.damping, cfg.sieve.name) == (7, 0.2, "llm")
    assert cfg.embedder.query_prefix == "q: a, b"
    cfg = load_config({"retriever": {"top_k": 7}}, overrides=["retriever=dense"])
    assert (cfg.retriever.name, cfg.retriever.top_k) == ("dense", 25)  # the option, not the source's fields


def test_fidelity_preset_field_selects_a_file_or_stays_a_label() -> None:
    code = load_config({"fidelity": {"preset": "reference_code"}}).fidelity
    assert code == load_config({"fidelity": "reference_code"}).fidelity
    assert code.preset == "reference_code"
    assert load_config({"fidelity": {"preset": "reference_code"}}).reader.merge == "string_dedupe"
    custom = load_config({"fidelity": {"preset": "custom"}, "reader": {"merge": "string_dedupe"}})
    assert custom.fidelity.preset == "custom" and custom.reader.merge == "string_dedupe"
    assert custom.retriever.atom_seeding == "topk"  # a label selects no file: the sections keep their defaults


@pytest.mark.parametrize(("source", "message"), [
    ({"retriever": "pprx"}, r"unknown retriever option 'pprx'; known: .*ppr_minilm"),
    ({"llm": {"option": "../llm/fake"}}, "unknown llm option"),
    ({"retriever": {"option": "ppr", "topk": 3}}, "retriever.topk"),
    ({"retriever": {"top_k": "many"}}, "retriever.top_k"),
    ({"retriever": {"name": "pagerank"}}, "RetrieverConfig.name='pagerank'"),
])
def test_bad_option_names_and_fields_are_errors_naming_the_key(source: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(source)


def test_a_bad_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("retriever:\n  topk: 3\n")
    with pytest.raises(ValueError, match=r"bad\.yaml.*retriever\.topk"):
        load_config(bad)


def test_a_full_config_object_round_trips() -> None:
    cfg = load_config({"retriever": "ppr", "llm": "fake"})
    assert load_config(cfg) == cfg and load_config(dataclasses.asdict(cfg)) == cfg
    assert load_config(Config()) == Config()  # a Config object is complete: no default option leaks in


@pytest.mark.parametrize("text", ["a: b, c", "it's", "end\\", "\\'", "${x}", "\\${x}", "null", "1", "",
                                  "tab\tand\nnewline", "[1,2]", "{a: 1}", "ümlaut", "%s", '"dq"'])
def test_any_string_survives_the_override_grammar(text: str) -> None:
    cfg = load_config({"embedder": {"query_prefix": text}, "llm": {"extra_args": [text, "b,c"]}})
    assert cfg.embedder.query_prefix == text and cfg.llm.extra_args == [text, "b,c"]
    assert encode_value(None) == "null" and encode_value(True) == "true" and encode_value(0.5) == "0.5"


def test_query_time_overrides_on_a_saved_config_can_name_options() -> None:
    saved = dataclasses.asdict(load_config({"retriever": {"top_k": 7}}))
    cfg = load_config(saved, overrides=to_overrides({"retriever": "dense"}))
    assert (cfg.retriever.name, cfg.retriever.top_k) == ("dense", 25)  # the option, not the saved fields
    cfg = load_config(saved, overrides=to_overrides({"retriever": {"top_k": 3}, "sieve": {"max_context": 5}}))
    assert (cfg.retriever.top_k, cfg.retriever.damping, cfg.sieve.max_context) == (3, saved["retriever"]["damping"], 5)


def test_config_groups_are_the_dataclass_sections_of_config() -> None:
    sections = {f.name for f in dataclasses.fields(Config)
                if dataclasses.is_dataclass(f.default_factory() if callable(f.default_factory) else f.default)}
    assert set(config_groups()) == sections


def test_group_files_extend_each_other() -> None:
    hybrid, base = group_config("retriever", "hybrid"), group_config("retriever", "ppr_minilm")
    assert (hybrid.damping, hybrid.entity_sim_threshold, hybrid.atom_seed_weight) == \
        (base.damping, base.entity_sim_threshold, base.atom_seed_weight)
    assert hybrid.lexical_weight == 0.3 and base.lexical_weight == 0.0
    assert "defaults" in yaml.safe_load((CONF_DIR / "retriever" / "hybrid.yaml").read_text())
    assert group_config("dataset", "medical_dev").name == "graphbench_medical"


def test_the_library_composes_inside_a_running_hydra_application(tmp_path: Path) -> None:
    """The harness runs under @hydra.main; library code it calls composes too, and leaves the
    application's own Hydra state as it was."""
    script = tmp_path / "app.py"
    script.write_text(f"""
import hydra
from hydra.core.global_hydra import GlobalHydra
from atomicrag.core.config import register_configs
from atomicrag.core.compose import load_config
register_configs()

@hydra.main(version_base="1.3", config_path={str(CONF_DIR)!r}, config_name="config")
def main(cfg):
    inner = load_config({{"retriever": "dense", "llm": "fake"}})
    assert inner.retriever.name == "dense" and GlobalHydra.instance().is_initialized()
    print("OK", cfg.retriever.lexical_weight, inner.retriever.name)

main()
""")
    out = subprocess.run([sys.executable, str(script), "hydra.run.dir=" + str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "OK 0.3 dense" in out.stdout


def test_a_misspelled_environment_setting_is_named_with_its_nearest_spelling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOMICRAG_RETRIEVER_TOP_K", "3")  # one underscore: not a setting
    with pytest.warns(UserWarning, match=r"ATOMICRAG_RETRIEVER_TOP_K .*did you mean ATOMICRAG_RETRIEVER__TOP_K"):
        cfg = load_config()
    assert cfg.retriever.top_k == 25
    monkeypatch.setenv("ATOMICRAG_STRICT_ENV", "1")
    with pytest.raises(ValueError, match="ATOMICRAG_RETRIEVER_TOP_K"):
        load_config()


def test_known_flags_and_settings_raise_no_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    for name in ("ATOMICRAG_NO_PROGRESS", "ATOMICRAG_VLLM_PYTHON"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__TOP_K", "3")
    monkeypatch.setenv("ATOMICRAG_STRICT_ENV", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_config().retriever.top_k == 3


def test_preset_names_a_whole_system_not_a_group_option() -> None:
    """"preset" has one meaning outside ``fidelity``'s label: a whole system (conf/preset/)."""
    with pytest.raises(ValueError, match=r"retriever.preset: name a retriever option with \{'option': 'ppr'\}"):
        load_config({"retriever": {"preset": "ppr"}})
