"""Run folders say what ran: the retriever preset the run composed (not its propagation method),
and only the models that a stage actually calls."""
from __future__ import annotations

from atomicrag.core.config import to_dataclass
from atomicrag.harness.experiments import compose_experiment
from atomicrag.harness.tracking import run_name


def _name(experiment: str | None, *overrides: str) -> str:
    return run_name(to_dataclass(compose_experiment(experiment, list(overrides))))


def test_the_folder_names_the_retriever_preset() -> None:
    assert _name(None, "retriever=hybrid").startswith("hybrid_")  # was ppr_..., hybrid's method
    assert _name(None, "retriever=ppr_minilm").startswith("ppr_minilm_")
    assert _name("table1/medical_rag").startswith("dense_passage_passages_")


def test_a_run_that_changes_the_method_is_named_by_the_method() -> None:
    assert _name(None, "retriever=ppr_minilm", "retriever.name=dense").startswith("dense_")


def test_only_the_models_that_run_are_named() -> None:
    llm = to_dataclass(compose_experiment(None, [])).llm.model.split("/")[-1].replace(".", "_")
    assert llm in _name(None)  # the quickstart's reader calls the LLM
    retrieval_only = _name(None, "reader=none")
    assert llm not in retrieval_only and "minilm" in retrieval_only
    assert "gpt-4o-mini" in _name("table2/medical_full")  # every LLM stage and the judge


def test_two_presets_that_differ_get_two_folders() -> None:
    assert _name(None, "retriever=hybrid") != _name(None, "retriever=ppr_minilm")
