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
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from atomicrag.core.config import register_configs
from atomicrag.core.config_moves import move_fields
from atomicrag.harness.experiments import compose_experiment

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
GOLDEN = Path(__file__).resolve().parent / "golden" / "composed_experiments.json"
ROOT_KEY = "<root>"


def _sweep(table: str, field: str, points: dict[str, str]) -> dict[str, tuple[str, list[str]]]:
    return {f"{table}/{old}": (f"{table}/sweep", [f"{field}={value}"]) for old, value in points.items()}


# recorded name -> (experiment now, overrides that select the recorded point)
RENAMED: dict[str, tuple[str, list[str]]] = {
    **{f"smoke/table2_{row}": (f"table2_smoke/{row}", []) for row in (
        "full", "wo_all", "wo_aqd", "wo_as", "wo_ergr", "wo_ergr_aqd", "wo_ergr_aqd_as", "wo_ka")},
    **_sweep("table12", "retriever.damping", {f"damping_0_{i}": f"0.{i}" for i in range(1, 10)}),
    **_sweep("table13", "retriever.atom_seed_weight", {
        f"seed_{v.replace('.', '_')}": v for v in (
            "0.01", "0.05", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0")}),
    **_sweep("fig4", "retriever.top_k", {f"topk_{k}": str(k) for k in (1, 5, 10, 15, 20, 25)}),
    **_sweep("fig5", "sieve.max_context", {f"ctx_{n}": str(n) for n in (2, 4, 8, 16, 32, 64)}),
}


def compose_all(names: list[str]) -> dict[str, dict]:
    register_configs()
    out = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for name in names:
            experiment, overrides = RENAMED.get(name, (None if name == ROOT_KEY else name, []))
            out[name] = OmegaConf.to_container(compose_experiment(experiment, overrides), resolve=True)
    return out


def experiment_names() -> list[str]:
    """The recorded names: every committed experiment, the renamed ones under their old name."""
    files = sorted((CONF / "experiment").rglob("*.yaml"))
    now = {str(p.relative_to(CONF / "experiment").with_suffix("")) for p in files}
    assert {new for new, _ in RENAMED.values()} <= now, "RENAMED points at an experiment that is gone"
    merged = {new for new, _ in RENAMED.values()}
    return [ROOT_KEY, *sorted((now - merged) | set(RENAMED))]


def _diff(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _diff(a.get(k, "<absent>"), b.get(k, "<absent>"),
                                                                  f"{path}.{k}" if path else k)]
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]


# Budgets that lived only in code became config fields with the values the code used: a record
# made before them holds the code's value here (an experiment that sets another is a change).
ADDED_FIELDS = {("atomizer", "ner_max_tokens"): 512, ("atomizer", "extraction_max_tokens"): 2048,
                ("atomizer", "vocab_filter_max_tokens"): 4096, ("judge", "max_tokens"): 1024,
                ("retriever", "query_ner_max_tokens"): 256, ("sieve", "max_tokens"): 512,
                ("embedder", "trust_remote_code"): False, ("judge.embedder", "trust_remote_code"): False,
                ("fidelity", "sieve_prompt"): "own", ("fidelity", "answer_extraction"): "own",
                ("fidelity", "decompose_parse"): "own", ("fidelity", "judge_replies"): "structured",
                ("fidelity", "budgets"): "own", ("dataset", "index_prefix"): False, ("llm", "price_per_mtok_in"): -1.0,
                ("llm", "price_per_mtok_out"): -1.0, ("judge.llm", "price_per_mtok_in"): -1.0,
                ("judge.llm", "price_per_mtok_out"): -1.0,
                # read only by the library's file ingest (no experiment reads .txt/.md files)
                ("dataset", "text_titles"): True,
                # the embedder's released-code switches moved into EmbedderConfig, so the judge's own
                # embedder has them too: at these values, as it was built before (with no switch)
                ("judge.embedder", "embed_pooling"): "model", ("judge.embedder", "embed_instruction"): "model",
                ("judge.embedder", "embed_recipe_models"): "bge", ("judge.embedder", "embed_precision"): "config"}
# top-level fields added to the harness's config: name -> value that keeps the old behaviour
ADDED_TOP_FIELDS = {"plan": False}
# fields added to FidelityConfig and set by a fidelity preset file: (field, preset) -> value there
# (elsewhere the dataclass default, which keeps the old behaviour)
ADDED_PRESET_FIELDS = {("sieve_prompt", "reference_code"): "released",
                       ("answer_extraction", "reference_code"): "released",
                       ("decompose_parse", "reference_code"): "released",
                       ("judge_replies", "reference_code"): "released",
                       ("budgets", "reference_code"): "released"}
# deliberate changes of an experiment's values: the Table 8 models that run their own code
CHANGED_VALUES = {("table8/nomic_embed", "embedder", "trust_remote_code"): True,
                  ("table8/gte_qwen2_1_5b", "embedder", "trust_remote_code"): True,
                  # the corpus as the released runner indexed it: the authors' chunk file, "{idx}:" prefixes
                  ("table1/2wiki_atomicrag", "dataset", "corpus_file"): "corpus_atomicrag_chunks.jsonl",
                  ("table1/2wiki_atomicrag", "dataset", "chunk_tokens"): 512,
                  ("table1/2wiki_atomicrag", "dataset", "index_prefix"): True,
                  ("table1/medical_atomicrag", "dataset", "index_prefix"): True}


def _with_added_fields(recorded: dict) -> dict:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in recorded.items()}
    fidelity = out.get("fidelity")
    if isinstance(fidelity, dict):  # before the defaults below: a preset's value wins
        for (name, preset), value in ADDED_PRESET_FIELDS.items():
            if name not in fidelity and fidelity.get("preset") == preset:
                fidelity[name] = value
    for (section, name), value in ADDED_FIELDS.items():
        head, _, sub = section.partition(".")
        target = out.get(head)
        if sub and isinstance(target, dict):
            target = out[head] = dict(target)
            target = target.get(sub)
            if isinstance(target, dict):
                target = out[head][sub] = dict(target)
        if isinstance(target, dict):
            target.setdefault(name, value)
    if "experiment_name" in out:  # a harness config (every recorded one is)
        for name, value in ADDED_TOP_FIELDS.items():
            out.setdefault(name, value)
    return out


def _read_values(cfg: dict) -> dict:
    """The values a run reads: a run without a judge never reads the judge's own models (their
    defaults moved from Python factories to conf/judge/llm.yaml; judge=llm rows compare in full)."""
    judge = cfg.get("judge")
    if isinstance(judge, dict) and judge.get("name") == "none":
        cfg = {**cfg, "judge": {k: v for k, v in judge.items() if k not in ("llm", "embedder")}}
    return cfg


def test_every_experiment_composes_to_its_recorded_values() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = compose_all(sorted(golden))
    # switches recorded under fidelity that moved to the section of their stage: same values, new place
    expected = {name: move_fields(_with_added_fields(golden[name]), warn=False) for name in golden}
    for (name, section, key), value in CHANGED_VALUES.items():
        expected[name][section] = {**expected[name][section], key: value}
    problems = {name: _diff(_read_values(expected[name]), _read_values(now[name])) for name in golden}
    problems = {k: v[:5] for k, v in problems.items() if v}
    assert not problems, json.dumps(problems, indent=1)[:6000]


def test_the_golden_file_covers_every_experiment() -> None:
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(experiment_names())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(json.dumps(compose_all(experiment_names()), sort_keys=True, separators=(",", ":")))
        print(f"wrote {GOLDEN}")
