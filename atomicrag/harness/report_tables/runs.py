"""Finished runs on disk, and the numbers a paper table reads from them.

A run folder (``atomicrag.harness.tracking``) holds ``metrics.json`` (read through its schema,
``harness.metrics_file``) and ``config.yaml``. A run fills the table row its experiment names:
its ``experiment`` and recorded ``row_label`` (``report_tables.declared``). Config values (for
``--where`` filters) come from the *resolved config* (``config.yaml``); when that file is
missing, the short ``metrics["config"]`` summary is used instead.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from atomicrag.harness.metrics_file import MetricsFileError, read_metrics

log = logging.getLogger(__name__)

# dotted config key -> key of the short summary in metrics.json["config"]
_SUMMARY_KEYS = {
    "retriever.name": "retriever", "atomizer.name": "atomizer", "embedder.model": "embedder",
    "llm.model": "llm", "decompose.name": "decompose", "sieve.name": "sieve",
    "retriever.damping": "damping", "retriever.atom_seed_weight": "atom_seed_weight",
    "retriever.top_k": "top_k", "fidelity.preset": "fidelity", "sieve.context_budget": "context_budget",
    "sieve.max_context": "max_context",
}
# Graph-Bench question types: acc_table key -> question_type in by_type
GB_TYPES = {
    "fact": "Fact Retrieval", "reason": "Complex Reasoning", "summ": "Contextual Summarize",
    "creat": "Creative Generation",
}
MODULES = ("index", "decompose", "retrieve", "sieve", "answer")  # the paper's modules (Table 7), judge excluded
# paper module -> accounting keys in metrics["cost"]["modules"]: whose tokens add up, and whose wall
# time counts (the first one present). The index timer covers atomization, whose LLM calls are
# accounted under "atomize"; query NER calls are accounted under "retrieve_ner".
MODULE_KEYS = {
    "index": {"tokens": ("index", "atomize"), "time": ("index", "atomize")},
    "decompose": {"tokens": ("decompose",), "time": ("decompose",)},
    "retrieve": {"tokens": ("retrieve", "retrieve_ner"), "time": ("retrieve",)},
    "sieve": {"tokens": ("sieve",), "time": ("sieve",)},
    "answer": {"tokens": ("answer",), "time": ("answer",)},
}
_MISSING = object()


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def experiment(self) -> str:
        return str(self.metrics.get("experiment") or self.config.get("experiment") or "")

    @property
    def row_label(self) -> str:
        """The paper-table row the run recorded filling (its experiment file's ``row_label``)."""
        return str(self.metrics.get("row_label") or self.config.get("row_label") or "")

    @property
    def dataset(self) -> str:
        return str(self.metrics.get("dataset") or self.config.get("dataset", {}).get("name") or "")

    @property
    def split(self) -> str:
        return str(self.metrics.get("split") or self.config.get("dataset", {}).get("split") or "")

    @property
    def sort_key(self) -> tuple[str, str]:
        return (str(self.metrics.get("finished_at", "")), str(self.path))

    def cfg(self, dotted: str, default: Any = None) -> Any:
        """A config value by dotted key, from config.yaml, else from the metrics summary."""
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                node = _MISSING
                break
            node = node[part]
        if node is not _MISSING:
            return node
        summary = self.metrics.get("config") or {}
        key = _SUMMARY_KEYS.get(dotted)
        return summary.get(key, default) if key else default

    def describe(self) -> str:
        """One line: what produced this run (for the table's run list)."""
        parts = [
            f"llm={self.cfg('llm.model')}", f"embedder={self.cfg('embedder.model')}",
            f"fidelity={self.cfg('fidelity.preset')}", f"split={self.split}",
            f"n={self.metrics.get('n_questions')}",
        ]
        return " ".join(parts)


# results/ folders that hold no table cell: the tables themselves, and checks that a command runs
# end to end on a small machine (a smoke slice with a 0.5B model is not a measurement of a paper cell)
NOT_TABLE_CELLS = frozenset({"tables", "cpu_check"})


def load_runs(results_dir: Path | str) -> list[Run]:
    """Every finished run under ``results_dir`` (folders holding a metrics.json)."""
    root = Path(results_dir)
    runs: list[Run] = []
    for mpath in sorted(root.glob("**/metrics.json")):
        if mpath.relative_to(root).parts[0] in NOT_TABLE_CELLS:
            continue
        try:  # checked against the schema: a table never reads a half-written or foreign file
            metrics = read_metrics(mpath).to_dict()
        except (OSError, MetricsFileError) as exc:
            log.warning("skipping %s: %s", mpath, exc)
            continue
        config: dict[str, Any] = {}
        cpath = mpath.parent / "config.yaml"
        if cpath.is_file():
            try:
                loaded = yaml.safe_load(cpath.read_text())
                config = loaded if isinstance(loaded, dict) else {}
            except yaml.YAMLError as exc:
                log.warning("unreadable %s: %s", cpath, exc)
        runs.append(Run(mpath.parent, metrics, config))
    return runs


def values_equal(actual: Any, wanted: Any) -> bool:
    """Config comparison that treats 0.1 == '0.1' and None == 'null'."""
    if callable(wanted):
        return bool(wanted(actual))
    if wanted is None or actual is None:
        return (actual in (None, "null", "None")) and (wanted in (None, "null", "None"))
    try:
        return math.isclose(float(actual), float(wanted), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return str(actual).lower() == str(wanted).lower()


def parse_where(items: Iterable[str]) -> dict[str, str]:
    """``['llm.model=gpt-4o-mini', ...]`` -> ``{'llm.model': 'gpt-4o-mini'}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--where expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def select(
    runs: Iterable[Run], experiments: Iterable[str], dataset: str | None, match: dict[str, Any],
) -> list[Run]:
    """Runs of one of ``experiments`` on ``dataset`` whose config matches, newest first."""
    exps = set(experiments)
    hits = [
        r for r in runs
        if r.experiment in exps
        and (dataset is None or r.dataset == dataset)
        and all(values_equal(r.cfg(k), v) for k, v in match.items())
    ]
    return sorted(hits, key=lambda r: r.sort_key, reverse=True)


# ---------------------------------------------------------------- extractors: Run -> float | None
Extractor = Callable[[Run], float | None]


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def graphbench(kind: str, metric: str = "acc") -> Extractor:
    """A Graph-Bench column: ``kind`` in fact/reason/summ/creat/avg.

    ``acc`` reads the judged ``acc_table``; any other metric (f1, em) reads ``by_type`` and
    averages the four types for ``avg`` (Graph-Bench's Avg. is the mean over types)."""

    def get(run: Run) -> float | None:
        if metric == "acc":
            return _num((run.metrics.get("acc_table") or {}).get(kind))
        by_type = run.metrics.get("by_type") or {}
        if kind != "avg":
            return _num((by_type.get(GB_TYPES[kind]) or {}).get(metric))
        vals = [_num((by_type.get(t) or {}).get(metric)) for t in GB_TYPES.values()]
        return sum(vals) / len(vals) if vals and all(v is not None for v in vals) else None

    get.per_question = ("graphbench", kind, metric)  # type: ignore[attr-defined]  # for intervals.py
    return get


def overall(metric: str) -> Extractor:
    """A whole-dataset metric (multi-hop columns): ``overall[metric]``."""
    def get(run: Run) -> float | None:
        return _num((run.metrics.get("overall") or {}).get(metric))

    get.per_question = ("overall", metric)  # type: ignore[attr-defined]  # for intervals.py
    return get


def graph_stat(name: str) -> Extractor:
    return lambda run: _num((run.metrics.get("graph_stats") or {}).get(name))


def cost(name: str) -> Extractor:
    return lambda run: _num((run.metrics.get("cost") or {}).get(name))


def retrieval_seconds_per_query(run: Run) -> float | None:
    """Retrieval latency per query (``retrieval_seconds_per_query`` or ``retrieval_ms_per_query``)."""
    c = run.metrics.get("cost") or {}
    if _num(c.get("retrieval_seconds_per_query")) is not None:
        return _num(c.get("retrieval_seconds_per_query"))
    ms = _num(c.get("retrieval_ms_per_query"))
    return None if ms is None else ms / 1000.0


def released_retrieval_seconds_per_query(run: Run) -> float | None:
    """The released code's ``retrieval_time`` per query: decomposition + retrieval + sieve (None for
    runs written before ``cost.retrieval_ms_per_query_released``)."""
    ms = _num((run.metrics.get("cost") or {}).get("retrieval_ms_per_query_released"))
    return None if ms is None else ms / 1000.0


def _modules(run: Run) -> dict[str, Any]:
    return (run.metrics.get("cost") or {}).get("modules") or {}


def module_tokens(modules: Iterable[str], which: str = "total", scale: float = 1e-6) -> Extractor:
    """Prompt/completion/total tokens summed over paper modules (default: in millions)."""
    keys = [k for m in modules for k in MODULE_KEYS.get(m, {"tokens": (m,)})["tokens"]]

    def get(run: Run) -> float | None:
        table = _modules(run)
        if not table:
            return None
        total = 0.0
        for key in keys:
            rec = table.get(key) or {}
            p, c = _num(rec.get("prompt_tokens")) or 0.0, _num(rec.get("completion_tokens")) or 0.0
            total += {"prompt": p, "completion": c, "total": p + c}[which]
        return total * scale

    return get


def module_seconds(modules: Iterable[str]) -> Extractor:
    """Wall seconds summed over paper modules (each: its first accounting key with a time)."""
    mods = tuple(modules)

    def get(run: Run) -> float | None:
        table, total, found = _modules(run), 0.0, False
        for m in mods:
            for key in MODULE_KEYS.get(m, {"time": (m,)})["time"]:
                rec = table.get(key) or {}
                sec = _num(rec.get("seconds", rec.get("wall_s")))
                if sec is not None:
                    total, found = total + sec, True
                    break
        return total if found else None

    return get


def answer_prompt_tokens_per_call(run: Run) -> float | None:
    """Mean LLM input length of the answer step (paper Fig. 4's 'token length')."""
    rec = _modules(run).get("answer") or {}
    calls, prompt = _num(rec.get("calls")), _num(rec.get("prompt_tokens"))
    return prompt / calls if calls and prompt is not None else None


def mean(values: Iterable[float | None]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals and all(v is not None for v in vals) else None  # type: ignore[misc]
