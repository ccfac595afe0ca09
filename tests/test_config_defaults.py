"""A default lives in one place, its dataclass: a group file holds only what differs from what it
starts from (the dataclass, or the file it extends), and every completion budget is a config field."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from atomicrag.core.compose import CONF_DIR, HARNESS_ROOT, compose
from atomicrag.harness.config import HarnessConfig

PACKAGE = Path(__file__).resolve().parents[1] / "atomicrag"


def _restated(own: dict[str, Any], base: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in own.items():
        if key == "defaults" and not prefix:
            continue
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            out += _restated(value, base[key], f"{prefix}{key}.")
        elif key in base and base[key] == value:
            out.append(f"{prefix}{key}")
    return out


def _section(group: str, option: str) -> dict[str, Any]:
    # the harness's root has every group (the library's and its judge and logger); the preset it
    # selects sets no field of these sections
    return OmegaConf.to_container(compose([f"{group}={option}"], root=HARNESS_ROOT)[group])


def _groups(conf_dir: Path) -> list[str]:
    """Every group whose files fill one dataclass section of the harness's config (which extends
    the library's ``Config``)."""
    sections = OmegaConf.structured(HarnessConfig)
    return [p.name for p in sorted(conf_dir.iterdir())
            if p.is_dir() and p.name in sections and OmegaConf.is_dict(sections[p.name])]


def restated_fields(conf_dir: Path = CONF_DIR) -> dict[str, list[str]]:
    """``{file: [fields equal to what the file starts from]}`` over every group file: the dataclass
    defaults, or the file it extends (``defaults: [ppr_minilm]``), with the sections it pulls in from
    other groups (``/llm@llm: openai_gpt4o_mini``) as those files give them."""
    found = {}
    for group in _groups(conf_dir):
        for path in sorted((conf_dir / group).glob("*.yaml")):
            own = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            entries = own.get("defaults", [])
            parents = [d for d in entries if isinstance(d, str) and d != "_self_"]
            base = (_section(group, parents[-1]) if parents
                    else OmegaConf.to_container(OmegaConf.structured(HarnessConfig)[group]))
            for entry in entries:
                if isinstance(entry, dict):  # "/llm@llm: openai_gpt4o_mini"
                    ((source, option),) = entry.items()
                    other, _, key = source.lstrip("/").partition("@")
                    base[key or other] = _section(other, option)
            names = _restated(own, base)
            if names:
                found[str(path.relative_to(conf_dir))] = names
    return found


def test_no_group_file_restates_a_default() -> None:
    assert restated_fields() == {}


def test_the_check_finds_a_restated_default(tmp_path: Path, monkeypatch) -> None:
    """The check above can fail: a copy of conf/ with defaults restated is caught."""
    import shutil

    from atomicrag.core import compose as composer

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    (conf / "retriever" / "ppr.yaml").write_text("top_k: 25\n")  # RetrieverConfig.top_k's default
    (conf / "retriever" / "hybrid.yaml").write_text(
        (CONF_DIR / "retriever" / "hybrid.yaml").read_text() + "damping: 0.7\n")  # what ppr_minilm sets
    (conf / "judge" / "llm.yaml").write_text(
        (CONF_DIR / "judge" / "llm.yaml").read_text().replace("llm:\n", "llm:\n  model: gpt-4o-mini\n"))
    monkeypatch.setattr(composer, "CONF_DIR", conf)
    assert restated_fields(conf) == {"judge/llm.yaml": ["llm.model"], "retriever/hybrid.yaml": ["damping"],
                                     "retriever/ppr.yaml": ["top_k"]}


def _budget_literals(tree: ast.AST) -> list[int]:
    """Line numbers where a completion budget is an integer literal: a ``*max_tokens`` keyword,
    parameter default, assignment or dict entry."""
    lines = []

    def is_int(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and type(node.value) is int

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg and node.arg.endswith("max_tokens") and is_int(node.value):
            lines.append(node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults + node.args.kw_defaults
            lines += [a.lineno for a, d in zip(args, defaults) if a.arg.endswith("max_tokens") and is_int(d)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in targets]
            if any(n.upper().endswith("MAX_TOKENS") for n in names) and (
                    is_int(node.value) or isinstance(node.value, ast.Dict)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict):
            lines += [k.lineno for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and str(k.value).endswith("max_tokens") and is_int(v)]
    return lines


def test_every_completion_budget_is_a_config_field() -> None:
    """Budgets live in the config dataclasses (core/config*.py); code reads them from there."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "core" and path.name.startswith("config"):
            continue
        lines = _budget_literals(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert found == {}


def test_the_budget_check_finds_a_literal() -> None:
    code = ("STAGE_MAX_TOKENS = {'sieve': 512}\n"
            "def f(max_tokens: int = 1024): pass\n"
            "g(max_tokens=4096)\n"
            "x = {'max_tokens': 256}\n")
    assert sorted(_budget_literals(ast.parse(code))) == [1, 2, 3, 4]
