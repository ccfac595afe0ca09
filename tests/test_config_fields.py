"""Every config field is validated before any work; input errors name the file (and line)."""
from __future__ import annotations

import dataclasses
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from atomicrag.core.compose import HARNESS_ROOT, load_config
from atomicrag.core.config import Config


def _config_classes() -> list[type]:
    """Every dataclass reachable from ``Config`` (so groups added later are walked too)."""
    seen: list[type] = []
    todo: list[type] = [Config]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.append(cls)
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        for f in dataclasses.fields(cls):
            t = hints[f.name]
            if dataclasses.is_dataclass(t):
                todo.append(t)
    return seen


def _needs_check(t: Any) -> bool:
    """Numbers, strings (choices and free text) and lists of them; booleans are typed by OmegaConf."""
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) is typing.Union and len(args) == 1:
        t = args[0]
    if t is bool:
        return False
    return t in (int, float, str) or typing.get_origin(t) is list


def test_every_numeric_choice_and_text_field_has_a_check() -> None:
    from atomicrag.core.checks import CHECKED

    load_config({})  # runs every __post_init__
    missing = []
    for cls in _config_classes():
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        for f in dataclasses.fields(cls):
            if _needs_check(hints[f.name]) and f.name not in CHECKED.get(cls.__name__, set()):
                missing.append(f"{cls.__name__}.{f.name}")
    assert not missing, (f"config fields without a range/choice check (add one to __post_init__ with the "
                         f"helpers of atomicrag/core/checks.py): {missing}")


@pytest.mark.parametrize("bad", [
    {"retriever": {"traversal_depth": -1}}, {"retriever": {"beam_size": 0}}, {"retriever": {"bfs_max_hops": -2}},
    {"retriever": {"tol": -0.1}}, {"retriever": {"device": "gpu"}}, {"retriever": {"katz_beta": 3.0}},
    {"retriever": {"anchor_top_k": 0}}, {"retriever": {"query_update_weight": -1.0}},
    {"llm": {"temperature": -0.5}}, {"llm": {"max_tokens": 0}}, {"llm": {"port": 70000}},
    {"llm": {"gpu_memory_utilization": 1.5}}, {"llm": {"device": "tpu"}}, {"llm": {"seed": -1}},
    {"embedder": {"device": "cuda0"}}, {"graph": {"device": "fast"}},
    {"graph": {"synonym_min_alnum": -1}}, {"reader": {"max_tokens": -5}}, {"decompose": {"complexity_threshold": 11}},
    {"atomizer": {"vocab_max_ngram": 0}}, {"atomizer": {"max_chunk_failures_frac": 1.5}},
    {"dataset": {"name": ".."}}, {"dataset": {"name": "x/../../y"}}, {"dataset": {"split": "../dev"}},
    {"embedder": {"model": ""}},
])
def test_nonsense_values_are_rejected_before_any_work(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load_config(bad)


@pytest.mark.parametrize(("bad", "named"), [
    ({"judge": {"embedder": "bge"}}, "judge.embedder"), ({"max_failure_rate": 2.0}, "max_failure_rate"),
    ({"baselines": ["dense_everything"]}, "dense_everything"), ({"experiment_name": "../../etc"}, "experiment_name"),
    ({"experiment_name": "a/b"}, "experiment_name"), ({"run_name": "..\\up"}, "run_name"),
])
def test_nonsense_harness_values_are_rejected_naming_the_field(bad: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        load_config(bad, root=HARNESS_ROOT)


def test_harness_fields_are_not_library_settings() -> None:
    """A library config has no run folder or judge: naming one is an unknown key, not ignored."""
    with pytest.raises(ValueError, match="experiment_name"):
        load_config({"experiment_name": "table2_smoke"})


def test_devices_and_names_that_are_fine() -> None:
    cfg = load_config({"retriever": {"device": "cuda:1"}, "experiment_name": "table2_smoke",
                       "dataset": {"name": "graphrag-bench.medical"}}, root=HARNESS_ROOT)
    assert cfg.retriever.device == "cuda:1" and cfg.experiment_name == "table2_smoke"


@pytest.mark.parametrize("value", ["sk-proj-AbC123dEf456GhI789jKl012", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz",
                                   "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "my key"])
def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it(value: str) -> None:
    with pytest.raises(ValueError) as info:
        load_config({"llm": {"api_key_env": value}})
    assert "looks like an API key" in str(info.value) and value not in str(info.value)


def test_unset_key_variable_warns(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from atomicrag.llm.backends import warn_if_key_missing

    monkeypatch.delenv("MY_ENDPOINT_KEY", raising=False)
    cfg = load_config({"llm": {"name": "openai", "api_key_env": "MY_ENDPOINT_KEY", "base_url": "http://x/v1"}})
    with caplog.at_level("WARNING", logger="atomicrag"):
        warn_if_key_missing(cfg.llm)
    assert "MY_ENDPOINT_KEY" in caplog.text and "not set" in caplog.text


@pytest.mark.parametrize("name,content,needle", [
    ("bad.yaml", b"retriever: [top_k: 3\n", r"bad.yaml:\d+: invalid YAML"),
    ("bad.json", b'{"retriever": ', r"bad.json:1: invalid JSON"),
    ("scalar.yaml", b"42\n", r"scalar.yaml: a config file must hold a mapping"),
    ("list.yaml", b"- retriever\n- reader\n", r"list.yaml: a config file must hold a mapping.*list"),
    ("latin1.yaml", b"retriever:\n  name: ppr\n# caf\xe9\n", r"latin1.yaml:3: config file is not UTF-8"),
])
def test_config_file_errors_name_the_file(tmp_path: Path, name: str, content: bytes, needle: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from atomicrag.library.cli import main

    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=needle):
        load_config(path)
    docs = tmp_path / "d.txt"
    docs.write_text("Marie Curie was born in Warsaw.")
    assert main(["-q", "index", str(docs), "--out", str(tmp_path / "idx"), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err


def test_non_utf8_corpus_line_is_reported_as_file_and_line(tmp_path: Path) -> None:
    from atomicrag.data.loaders import read_passages_jsonl
    from atomicrag.data.validate import DataError

    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:2: not UTF-8"):
        read_passages_jsonl(path)


def test_cli_documents_that_are_not_utf8_name_file_and_line(tmp_path: Path) -> None:
    from atomicrag.data.validate import DataError
    from atomicrag.library.cli import read_documents

    (tmp_path / "docs.jsonl").write_bytes(b'{"text": "ok"}\n\n{"text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"docs.jsonl:3: not UTF-8"):
        read_documents(tmp_path / "docs.jsonl")
    (tmp_path / "note.txt").write_bytes(b"line one\nline \xff two\n")
    with pytest.raises(DataError, match=r"note.txt:2: not UTF-8"):
        read_documents(tmp_path / "note.txt")


@pytest.mark.parametrize("doc", ["", "   \n", {"doc_id": "x", "text": ""}])
def test_library_rejects_documents_with_empty_text(doc: Any) -> None:
    from atomicrag.library.types import normalize_documents

    with pytest.raises(ValueError, match="empty text"):
        normalize_documents([doc])


def test_harness_rejects_passages_with_empty_text(tmp_path: Path) -> None:
    from atomicrag.data.loaders import read_passages_jsonl
    from atomicrag.data.validate import DataError

    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "  "}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:1: field 'text': empty text"):
        read_passages_jsonl(path)
