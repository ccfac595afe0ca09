"""The schema of a run's ``metrics.json``: typed records, built in one function, read and written here.

A run's numbers come from several stages (``evaluate.score.score_run``: scores; the pipeline:
dataset, graph, cost and stage counts; ``engine.failures.summarize_run``: failures and status;
the run folder: name, commit, environment). ``build_run_metrics`` puts them into one
``RunMetrics``; ``write_metrics`` is the one place a metrics.json is written and ``read_metrics``
the one place it is read back, checked: a missing or mistyped key is a ``MetricsFileError``
naming the file and the key, never a ``KeyError`` deep inside a table.

The JSON keys, their order and their values are those of the files written before this schema
(the committed ``results/**/metrics.json`` round-trip byte for byte). Sections whose keys vary
with the run (per-type score cells, graph statistics, per-module accounting) stay dicts.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from atomicrag.core.artifacts import write_json_atomic

OPTIONAL = {"optional": True}  # a key some runs do not have: absent from the file when None


class MetricsFileError(ValueError):
    """A metrics.json that does not match the schema (the message names the file and the key)."""


@dataclass
class Headline:
    """The one number a run is summarised by: acc, else f1, else recall@5."""

    name: str
    value: float


@dataclass
class Cost:
    """Tables 4 and 7: tokens and time per module (the accountant's), per run and per question."""

    modules: dict[str, dict[str, Any]]
    total_prompt_tokens: int
    total_completion_tokens: int
    index_tokens: int
    qa_tokens: int
    tokens_per_query: float
    seconds_per_query: float
    retrieval_ms_per_query: float
    wall_seconds: float
    # the released code's retrieval_time: decomposition + retrieval + sieve, per question (ours above
    # is the retrieve module alone); runs before it have none
    retrieval_ms_per_query_released: float | None = field(default=None, metadata=OPTIONAL)


@dataclass
class Models:
    llm: str | None  # None: the run built no LLM
    embedder: str


@dataclass
class Failures:
    """``engine.failures.summarize_run``: what failed, per module, against the threshold."""

    llm_requests: int
    llm_failures: int
    by_module: dict[str, dict[str, Any]]
    questions: int
    failed_questions: int
    failed_question_ids: list[str]
    chunks: int
    failed_chunks: int
    threshold: float
    exceeded: list[str]
    # replies cut by a completion budget the config chose, per module: reported, not failures
    cut_by_budget: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    # fidelity.extraction_replies=released: NER/extraction replies read as empty, as released
    # ({"ner": n, "extraction": n}); counted against the threshold
    released_fallbacks: dict[str, int] | None = field(default=None, metadata=OPTIONAL)


@dataclass(kw_only=True)
class RunMetrics:
    """metrics.json, its keys in file order. A field without ``OPTIONAL`` is required."""

    # scores (evaluate/score.py: score_run), percentages 0-100
    overall: dict[str, Any]
    by_type: dict[str, dict[str, Any]]
    by_native_type: dict[str, dict[str, Any]]
    avg_over_types: dict[str, Any]
    by_group: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    acc_table: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)  # runs graded by a judge
    judge: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)  # verdict counts + settings
    headline: Headline | None = field(default=None, metadata=OPTIONAL)  # absent when no score exists
    # the run (pipeline.py)
    dataset: str
    split: str
    n_questions: int
    row_label: str
    graph_stats: dict[str, Any]
    indexes: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)  # one per corpus
    stages: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)  # LLM stage counts
    # answers reused from the checkpoint of an earlier, killed run of this folder (None: no reader)
    resumed_answers: int | None = field(default=None, metadata=OPTIONAL)
    cost: Cost
    models: Models
    config: dict[str, Any]  # pipeline.summary_fields
    # where the prompts came from (own | released, the checkout, a hash per released template) and
    # every difference from the released pipeline (harness/differences.py); older runs have neither
    prompts: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    differences: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)
    # failures (engine/failures.py: summarize_run); runs written before them have none
    failures: Failures | None = field(default=None, metadata=OPTIONAL)
    error_rate: float | None = field(default=None, metadata=OPTIONAL)
    status: str | None = field(default=None, metadata=OPTIONAL)  # finished | failed
    # the run folder
    run_name: str
    experiment: str
    git_commit: str | None  # None: not a git checkout
    environment: dict[str, Any]
    finished_at: str
    # how the run was made (harness/provenance.py): command, full config, commit and dirty flag, model
    # and data file hashes, machine, start/end; runs written before it have none
    provenance: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    # the run plan printed before the run, per stage next to what was measured (harness/plan.py)
    plan: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)

    def to_dict(self) -> dict[str, Any]:
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: Any, source: str) -> RunMetrics:
        """Check ``data`` against the schema; ``source`` (the file) is named in every error."""
        return _from_dict(cls, data, source, "")


# ----------------------------------------------------------------------------- build, write, read
def build_run_metrics(scores: dict[str, Any], run: dict[str, Any], outcome: dict[str, Any],
                      folder: Path, experiment: str) -> RunMetrics:
    """The one place a run's metrics are assembled: ``scores`` from ``score_run``, ``run`` the
    pipeline's facts (dataset, split, n_questions, row_label, graph_stats, indexes, stages, cost,
    models, config, ``judge_settings`` when a judge graded the run, ``provenance`` from
    ``harness.provenance``), ``outcome`` from
    ``summarize_run``; the run folder's name, commit and environment are added here."""
    data = {**scores}
    judge_settings = run.get("judge_settings")
    provenance = run.get("provenance")
    run = {k: v for k, v in run.items() if k not in ("judge_settings", "provenance")}
    data.update(run)
    if judge_settings is not None:  # the judge's summary (score_run) gains what graded it
        data["judge"] = {**(data.get("judge") or {}), "settings": judge_settings}
    data.update(outcome)
    data.update({"run_name": folder.name, "experiment": experiment, "git_commit": git_commit(),
                 "environment": environment(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    if provenance is not None:  # last key: the files written before it keep their key order
        data["provenance"] = provenance
    return RunMetrics.from_dict(data, f"metrics of {folder}")


def write_metrics(folder: Path, metrics: RunMetrics) -> None:
    write_json_atomic(folder / "metrics.json", metrics.to_dict())


def read_metrics(folder_or_file: Path) -> RunMetrics:
    """The checked metrics of a run folder (or of a metrics.json path)."""
    path = Path(folder_or_file)
    path = path if path.suffix == ".json" else path / "metrics.json"
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MetricsFileError(f"{path}: not JSON ({exc})") from None
    return RunMetrics.from_dict(data, str(path))


def git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=here,
                             check=False)
        commit = out.stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=5, cwd=here, check=False).stdout.strip()
        return (commit + ("-dirty" if dirty else "")) if commit else None
    except (OSError, subprocess.SubprocessError):
        return None


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform()}
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        env["threads"] = torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a hard requirement in practice
        pass
    return env


# ----------------------------------------------------------------------------- checking
def _to_dict(rec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        if value is None and f.metadata.get("optional"):
            continue
        out[f.name] = _to_dict(value) if dataclasses.is_dataclass(value) else value
    return out


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)


def _check(value: Any, tp: Any, source: str, key: str) -> Any:
    """``value`` as type ``tp`` (a nested record is built), or ``MetricsFileError``."""
    origin = get_origin(tp)
    if origin is Union or type(tp).__name__ == "UnionType":
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _check(value, arg, source, key)
            except MetricsFileError as exc:
                errors.append(str(exc))
        raise MetricsFileError(errors[0] if len(errors) == 1 else
                               f"{source}: key {key!r} has a {type(value).__name__}, not {tp}")
    if dataclasses.is_dataclass(tp):
        return _from_dict(tp, value, source, key + ".")
    if tp is Any:
        return value
    want = origin or tp
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if want is float
          else isinstance(value, int) and not isinstance(value, bool) if want is int
          else isinstance(value, want))
    if not ok:
        raise MetricsFileError(f"{source}: key {key!r} should be {_type_name(want)}, "
                               f"not {type(value).__name__} ({json.dumps(value, default=str)[:60]})")
    return value


def _from_dict(cls: Any, data: Any, source: str, prefix: str) -> Any:
    if not isinstance(data, dict):
        where = f"key {prefix[:-1]!r}" if prefix else "the file"
        raise MetricsFileError(f"{source}: {where} should be an object, not {type(data).__name__}")
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in names]
    if unknown:  # a new key belongs in this schema first
        raise MetricsFileError(f"{source}: unknown key {prefix + unknown[0]!r} (not in harness/metrics_file.py)")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.metadata.get("optional"):
                continue
            raise MetricsFileError(f"{source}: missing key {prefix + f.name!r}")
        if data[f.name] is None and f.metadata.get("optional"):  # absent is how a run says "none"
            raise MetricsFileError(f"{source}: key {prefix + f.name!r} is null (leave it out instead)")
        kwargs[f.name] = _check(data[f.name], hints[f.name], source, prefix + f.name)
    return cls(**kwargs)
