"""The judge's and the embedder's released-code switches live in their sections (judge.*, embedder.*);
every old spelling (``fidelity.acc_weight=...`` as an override, an environment variable, a dict or
file source, a saved run folder's config, a saved index's manifest) still lands there, with a warning."""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
import yaml

from atomicrag.core.compose import HARNESS_ROOT, load_config
from atomicrag.core.config import Config, FidelityConfig
from atomicrag.core.config_moves import MOVED_FIELDS

ROOT = Path(__file__).resolve().parents[2]
# each moved switch with a value other than its default
JUDGE = {"acc_weight": 0.75, "acc_similarity": "rescaled", "judge_failures": "zero", "judge_replies": "released"}
EMBEDDER = {"embed_pooling": "mean", "embed_instruction": "released", "embed_recipe_models": "all",
            "embed_precision": "fp32"}
MOVED = [("judge", name, value) for name, value in JUDGE.items()] + [
    ("embedder", name, value) for name, value in EMBEDDER.items()]


def test_fidelity_keeps_only_the_shared_prompt_source() -> None:
    assert {f.name for f in dataclasses.fields(FidelityConfig)} == {
        "preset", "prompts", "released_code", "extraction_replies", "budgets", "request_seed", "empty_replies"}
    for section, name, _ in MOVED:
        assert MOVED_FIELDS[("fidelity", name)] == section


@pytest.mark.parametrize(("section", "name", "value"), MOVED)
def test_an_old_spelling_override_lands_in_its_section_with_a_warning(section, name, value, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        cfg = load_config(overrides=[f"fidelity.{name}={value}"], env_prefix=None, root=HARNESS_ROOT)
    assert getattr(getattr(cfg, section), name) == value
    assert f"fidelity.{name} is now {section}.{name}" in caplog.text


@pytest.mark.parametrize(("section", "name", "value"), MOVED)
def test_an_old_spelling_in_a_saved_config_lands_in_its_section_with_a_warning(
        section, name, value, tmp_path, caplog) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"fidelity": {"preset": "custom", name: value}}))
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        cfg = load_config(path, env_prefix=None, root=HARNESS_ROOT)
    assert getattr(getattr(cfg, section), name) == value and cfg.fidelity.preset == "custom"
    assert f"fidelity.{name} -> {section}.{name}" in caplog.text


def test_an_old_spelling_in_the_environment_lands_in_its_section(monkeypatch) -> None:
    monkeypatch.setenv("ATOMICRAG_FIDELITY__ACC_WEIGHT", "0.75")
    monkeypatch.setenv("ATOMICRAG_FIDELITY__EMBED_POOLING", "mean")
    cfg = load_config(None, root=HARNESS_ROOT)
    assert (cfg.judge.acc_weight, cfg.embedder.embed_pooling) == (0.75, "mean")


def test_the_library_has_no_judge_so_its_old_spellings_are_ignored_with_a_warning(monkeypatch, caplog) -> None:
    """The library's ``Config`` has no judge section: a judge switch in the old spelling (which the
    library never read) is dropped with a warning instead of failing as an unknown key."""
    monkeypatch.setenv("ATOMICRAG_FIDELITY__JUDGE_FAILURES", "zero")
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        cfg = load_config({"fidelity": {"acc_weight": 0.75, "embed_pooling": "mean"}},
                          overrides=["fidelity.acc_similarity=rescaled"])
    assert type(cfg) is Config and cfg.embedder.embed_pooling == "mean"
    for name in ("acc_weight", "acc_similarity", "judge_failures"):
        assert f"ignored fidelity.{name} (now judge.{name})" in caplog.text
    with pytest.raises(ValueError, match="judge"):  # the new spelling names a section the library lacks
        load_config({"judge": {"acc_weight": 0.75}})


def test_a_committed_run_folders_config_loads_with_its_switches_in_their_sections() -> None:
    """results/ run folders were saved with the switches under ``fidelity``; read as every saved
    config is read, each value is in its new section (this one ran fidelity=reference_code)."""
    path = ROOT / "results" / "cpu_check" / "table1_medical_atomicrag_qwen05b" / "config.yaml"
    saved = yaml.safe_load(path.read_text())
    cfg = load_config(path, env_prefix=None, root=HARNESS_ROOT)
    recorded = [(section, name) for section, name, _ in MOVED if name in saved["fidelity"]]
    assert len(recorded) >= 7  # saved before embed_precision existed: that one takes its default
    for section, name in recorded:
        assert getattr(getattr(cfg, section), name) == saved["fidelity"][name], name
    assert (cfg.judge.acc_weight, cfg.embedder.embed_pooling) == (0.75, "mean")


def test_an_index_saved_with_fidelity_embed_switches_keeps_them(caplog) -> None:
    """A manifest written before the move carries the embedder's switches under ``fidelity`` (and
    the judge's, which the library does not read): reopened, the embedder's are the index's
    embedder settings, so a load that changes one is refused as any embedder change is."""
    from atomicrag.library.index_settings import index_settings
    from atomicrag.library.reopen import reopen_config

    saved = index_settings(dataclasses.asdict(load_config({"embedder": {"name": "fake"}}, env_prefix=None)))
    saved["embedder"] = {k: v for k, v in saved["embedder"].items() if k not in EMBEDDER}
    saved["fidelity"] = {**saved["fidelity"], **EMBEDDER, **JUDGE}  # the manifest's old shape
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        cfg = reopen_config(saved, None, (), byo_embedder=False)
    assert {name: getattr(cfg.embedder, name) for name in EMBEDDER} == EMBEDDER
    assert "fidelity.embed_pooling -> embedder.embed_pooling" in caplog.text
    with pytest.raises(ValueError, match="cannot change on load"):
        reopen_config(saved, {"embedder": {"embed_pooling": "model"}}, (), byo_embedder=False)
