"""Read string constants out of a checkout of the released AtomicRAG code, without running it.

A checkout is data: its Python files are parsed with ``ast`` and only a small, closed set of
expression forms is evaluated (string constants, names bound at module level or imported from a
sibling template file, ``+``, f-strings over such names, ``str.format`` / ``"sep".join`` over
them, literal lists and dicts, and two pure helpers whose meaning is fixed: ``Template(text)``
is the text, ``json.dumps`` is ``json.dumps``, and the released ``convert_format_to_template``
rewrites ``{name}`` as ``${name}``). Anything else (a function call, an attribute of an object)
raises ``ReleasedParseError`` naming the file and line, so a changed checkout fails loudly
instead of being half-read. Nothing from the checkout is imported or executed.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

_FORMAT_FIELD = re.compile(r"\{(\w+)\}")


class ReleasedParseError(ValueError):
    """A construct of the released file that this reader does not evaluate."""


def format_to_template(text: str) -> str:
    """``{name}`` -> ``${name}`` (what the released helper does with no mapping and no statics)."""
    return _FORMAT_FIELD.sub(lambda m: "${" + m.group(1) + "}", text)


class ModuleConstants:
    """The module-level constants of one released file, evaluated on demand."""

    def __init__(self, path: Path, siblings: dict[str, Path] | None = None) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self._siblings = siblings or {}
        self._assign: dict[str, ast.expr] = {}
        self._imported: dict[str, tuple[str, str]] = {}  # local name -> (sibling module, name)
        self._cache: dict[str, Any] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self._assign[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                self._assign[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    self._imported[alias.asname or alias.name] = (node.module, alias.name)

    def names(self) -> list[str]:
        return list(self._assign)

    def function(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node
        raise ReleasedParseError(f"{self.path}: no function {name!r}")

    def get(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        if name in self._assign:
            value = self.resolve(self._assign[name], {})
        elif name in self._imported:
            module, attr = self._imported[name]
            sibling = self._siblings.get(module)
            if sibling is None:
                raise ReleasedParseError(f"{self.path}: {name!r} is imported from {module!r}, not a template file")
            value = ModuleConstants(sibling, self._siblings).get(attr)
        else:
            raise ReleasedParseError(f"{self.path}: no module-level constant {name!r}")
        self._cache[name] = value
        return value

    def resolve(self, node: ast.expr, local: dict[str, Any]) -> Any:
        """Evaluate one expression of the closed set (see the module docstring)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.Name):
            return local[node.id] if node.id in local else self.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.resolve(node.left, local), self.resolve(node.right, local)
            if not (isinstance(left, str) and isinstance(right, str)):
                raise self._error(node, "'+' of non-strings")
            return left + right
        if isinstance(node, ast.JoinedStr):
            return "".join(self._fstring_part(v, local) for v in node.values)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.resolve(e, local) for e in node.elts]
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise self._error(node, "dict unpacking")
            return {self.resolve(k, local): self.resolve(v, local) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Subscript):
            return self.resolve(node.value, local)[self.resolve(node.slice, local)]
        if isinstance(node, ast.Call):
            return self._call(node, local)
        raise self._error(node, type(node).__name__)

    def _fstring_part(self, part: ast.expr, local: dict[str, Any]) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
            return str(self.resolve(part.value, local))
        raise self._error(part, "f-string field with a conversion or format spec")

    def _call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        func = node.func
        kwargs = {k.arg: self.resolve(k.value, local) for k in node.keywords if k.arg}
        if len(kwargs) != len(node.keywords):
            raise self._error(node, "** arguments")
        if isinstance(func, ast.Name) and func.id == "Template" and len(node.args) == 1 and not kwargs:
            return self._text(self.resolve(node.args[0], local), node)
        if isinstance(func, ast.Name) and func.id == "convert_format_to_template":
            text = kwargs.get("original_string", self.resolve(node.args[0], local) if node.args else None)
            if kwargs.get("placeholder_mapping") or kwargs.get("static_values"):
                raise self._error(node, "convert_format_to_template with a mapping")
            return format_to_template(self._text(text, node))
        if (isinstance(func, ast.Attribute) and func.attr == "dumps" and isinstance(func.value, ast.Name)
                and func.value.id == "json" and len(node.args) == 1):
            return json.dumps(self.resolve(node.args[0], local), **{k: v for k, v in kwargs.items()
                                                                 if k in ("ensure_ascii", "indent")})
        if isinstance(func, ast.Attribute) and func.attr == "format":
            text = self._text(self.resolve(func.value, local), node)
            args = [self._text(self.resolve(a, local), node) for a in node.args]
            return text.format(*args, **{k: self._text(v, node) for k, v in kwargs.items()})
        if (isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1
                and isinstance(node.args[0], ast.GeneratorExp)):
            sep = self._text(self.resolve(func.value, local), node)
            return sep.join(self._text(x, node) for x in self._generate(node.args[0], local))
        raise self._error(node, f"call of {ast.unparse(func)}")

    def _generate(self, gen: ast.GeneratorExp, local: dict[str, Any]) -> list[Any]:
        if len(gen.generators) != 1 or gen.generators[0].ifs or not isinstance(gen.generators[0].target, ast.Name):
            raise self._error(gen, "a generator other than 'x for x in NAME'")
        comp = gen.generators[0]
        return [self.resolve(gen.elt, {**local, comp.target.id: item})  # type: ignore[union-attr]
                for item in self.resolve(comp.iter, local)]

    def _text(self, value: Any, node: ast.AST) -> str:
        if not isinstance(value, str):
            raise self._error(node, f"{type(value).__name__} where a string is expected")
        return value

    def _error(self, node: ast.AST, what: str) -> ReleasedParseError:
        return ReleasedParseError(f"{self.path}:{getattr(node, 'lineno', '?')}: cannot evaluate {what} "
                                  "(the checkout differs from the released layout this reader knows)")


def find_assignment(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.expr:
    """The value assigned to local ``name`` inside a function body (first occurrence)."""
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            return node.value
    raise ReleasedParseError(f"function {fn.name!r} assigns no {name!r}")
