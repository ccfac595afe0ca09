"""Every config field is read by some code: a knob that does nothing is a lie about the system.

Static check over ``atomicrag/`` (the modules defining the sections, config.py and
config_query.py, excluded: their validation reads every field). A field ``F`` of section ``S``
(``llm``, ``retriever``, ...) counts as read where the code accesses

- ``<anything>.S.F`` (``cfg.llm.temperature``, ``self.config.retriever.top_k``);
- ``x.F`` where ``x`` is a parameter annotated with the section's class (``cfg: LLMConfig``), or an
  attribute ``self.x`` its class assigned from such a parameter;
- the string ``"F"`` as a field name (in a tuple/list literal, as getattr's name or a subscript key)
  in a module that uses the section: the dict of an embedder config;
- a field an atomizer's registry entry declares as its cache key (``core/registry.py``: read with
  getattr when ``graph.cached_build`` keys the atomize stage);
- ``self.F`` in a method of the config class other than ``__post_init__`` (``resolved_data_dir``).
"""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from atomicrag.core import config as config_module
from atomicrag.core.config import Config

CORE = Path(config_module.__file__).resolve().parent
PKG = CORE.parent  # the whole package is searched for reads
# where the config dataclasses are defined (their validation reads every field: not a use)
DEFINITIONS = (CORE / "config.py", CORE / "config_query.py")

# Fields defined ahead of the code that reads them (empty: every field is read).
ALLOWED_UNREAD: set[tuple[str, str]] = set()


def _sections() -> dict[str, type]:
    """Section attribute name -> its dataclass ("" -> Config for the top-level fields)."""
    out: dict[str, type] = {"": Config}
    for f in dataclasses.fields(Config):
        t = f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
        if dataclasses.is_dataclass(t):
            out[f.name] = type(t)
    return out


def _annotation_classes(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ast.unparse(node)
    return {part.strip(" \"'") for part in text.replace("|", " ").replace("[", " ").replace("]", " ").split()}


class _Reads(ast.NodeVisitor):
    def __init__(self, by_class: dict[str, str], sections: dict[str, type]) -> None:
        self.by_class = by_class  # class name -> section name
        self.section_names = {s for s in sections if s}
        self.found: set[tuple[str, str]] = set()
        self._scopes: list[dict[str, str]] = [{}]  # variable -> section
        self._self_attrs: list[dict[str, str]] = [{}]  # self.<attr> -> section, per class

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._self_attrs.append({})
        # first pass: self.x = <param annotated with a config class> anywhere in the class
        for fn in (n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            typed = self._typed_args(fn)
            for sub in ast.walk(fn):
                section = self._section_of_value(sub.value, typed) if isinstance(sub, ast.Assign) else None
                if section is not None:
                    for tgt in sub.targets:
                        if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self":
                            self._self_attrs[-1][tgt.attr] = section
        self.generic_visit(node)
        self._self_attrs.pop()

    def _section_of_value(self, value: ast.AST, typed: dict[str, str]) -> str | None:
        """The section a value holds: ``cfg`` (typed), ``x.retriever``, ``cfg or AtomizerConfig(...)``."""
        if isinstance(value, ast.Name):
            return typed.get(value.id)
        if isinstance(value, ast.Attribute):
            return value.attr if value.attr in self.section_names else None
        if isinstance(value, ast.Call):
            return self.by_class.get(value.func.id) if isinstance(value.func, ast.Name) else None
        if isinstance(value, (ast.BoolOp, ast.IfExp)):
            parts = value.values if isinstance(value, ast.BoolOp) else [value.body, value.orelse]
            found = {self._section_of_value(p, typed) for p in parts} - {None}
            return found.pop() if len(found) == 1 else None
        return None

    def _typed_args(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
        out = {}
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        for a in args:
            for cls in _annotation_classes(a.annotation):
                if cls in self.by_class:
                    out[a.arg] = self.by_class[cls]
        return out

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope = {**self._scopes[-1], **self._typed_args(node)}
        for sub in ast.walk(node):  # aliases: rc = cfg.retriever; c = cfg or RetrieverConfig()
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                section = self._section_of_value(sub.value, scope)
                if section is not None:
                    scope[sub.targets[0].id] = section
        self._scopes.append(scope)
        self.generic_visit(node)
        self._scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        v = node.value
        section = self._section_of_value(v, self._scopes[-1])
        if section is not None:
            self.found.add((section, node.attr))
        if (isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "self"
                and v.attr in self._self_attrs[-1]):
            self.found.add((self._self_attrs[-1][v.attr], node.attr))
        self.generic_visit(node)


def _config_class_methods(sections: dict[str, type]) -> set[tuple[str, str]]:
    """``self.F`` read by a config class's own methods (not its validation)."""
    found = set()
    section_of = {cls.__name__: s for s, cls in sections.items()}
    for node in (n for path in DEFINITIONS for n in ast.parse(path.read_text()).body):
        if isinstance(node, ast.ClassDef) and node.name in section_of:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name != "__post_init__":
                    for sub in ast.walk(fn):
                        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                            found.add((section_of[node.name], sub.attr))
    return found


def _field_name_strings(tree: ast.AST) -> set[str]:
    """Strings used as field names: elements of tuple/list/set literals (field lists read with
    getattr), getattr's name argument and subscript keys (``cfg["dim"]``)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        items: list[ast.AST] = []
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            items = list(n.elts)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr"):
            items = n.args[1:2]
        elif isinstance(n, ast.Subscript):
            items = [n.slice]
        out |= {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
    return out


def unread_fields() -> list[tuple[str, str]]:
    sections = _sections()
    by_class = {cls.__name__: s for s, cls in sections.items()}
    fields = {(s, f.name) for s, cls in sections.items() for f in dataclasses.fields(cls)
              if not (s == "" and f.name in sections)}
    found = _config_class_methods(sections)
    from atomicrag.core.registry import ATOMIZERS

    found |= {("atomizer", f) for name in ATOMIZERS.names() for f in ATOMIZERS.cache_key_fields(name)}
    for path in sorted(PKG.rglob("*.py")):
        if path in DEFINITIONS:
            continue
        source = path.read_text()
        tree = ast.parse(source)
        visitor = _Reads(by_class, sections)
        visitor.visit(tree)
        found |= visitor.found
        uses = {s for s, cls in sections.items() if cls.__name__ in source or (s and f".{s}" in source)}
        strings = _field_name_strings(tree)
        found |= {(s, f) for s, f in fields if s in uses and f in strings}
    return sorted((s or "Config", f) for s, f in fields - found - ALLOWED_UNREAD)


def test_every_config_field_is_read() -> None:
    assert unread_fields() == [], "config fields no code reads (wire them or delete them)"


def test_the_check_finds_an_unread_field(monkeypatch) -> None:
    """The check is not vacuous: a field nothing reads is reported."""
    @dataclasses.dataclass
    class SieveConfig(config_module.SieveConfig):  # type: ignore[misc]
        knob_nobody_reads_xyz: int = 3

    @dataclasses.dataclass
    class Config(config_module.Config):  # the same class name: code annotated with Config still counts
        sieve: SieveConfig = dataclasses.field(default_factory=SieveConfig)

    monkeypatch.setattr(f"{__name__}.Config", Config)
    assert unread_fields() == [("sieve", "knob_nobody_reads_xyz")]
