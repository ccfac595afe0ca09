"""Checks of what a saved graph holds, run on load: shapes, index ranges, readable files.

A damaged or hand-edited file must fail on load with a message naming the file, never load as
an empty or mis-shaped graph that answers (an embedding matrix with fewer rows than atoms) or
fails later with a misleading propagation error (adjacency columns out of range).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class IndexDamagedError(ValueError):
    """A saved index or graph folder whose files are unreadable or inconsistent."""


def damaged(path: str | Path, problem: str) -> IndexDamagedError:
    return IndexDamagedError(f"{path}: the index is damaged: {problem} (restore it from a copy or re-index)")


def read_file(path: Path, reader: Callable[[Path], T]) -> T:
    """``reader(path)``, with any failure (missing, truncated, not JSON, bad header) naming the file."""
    if not path.is_file():
        raise damaged(path, "the file is missing")
    try:
        return reader(path)
    except IndexDamagedError:
        raise
    except Exception as exc:
        raise damaged(path, f"unreadable ({type(exc).__name__}: {str(exc)[:200]})") from exc


def read_json_object(path: Path) -> dict[str, Any]:
    obj = read_file(path, lambda p: json.loads(p.read_text(encoding="utf-8")))
    if not isinstance(obj, dict):
        raise damaged(path, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _vector(file: Path, t: dict[str, torch.Tensor], name: str, length: int | None = None) -> torch.Tensor:
    if name not in t:
        raise damaged(file, f"tensor {name!r} is missing")
    x = t[name]
    if x.dim() != 1 or (length is not None and x.numel() != length):
        want = f"[{length}]" if length is not None else "1-D"
        raise damaged(file, f"tensor {name!r} has shape {list(x.shape)}, expected {want}")
    return x


def _in_range(file: Path, name: str, x: torch.Tensor, n: int) -> None:
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= n):
        raise damaged(file, f"tensor {name!r} holds node ids outside [0, {n}) (min {int(x.min())}, max {int(x.max())})")


def check_graph_tensors(file: Path, t: dict[str, torch.Tensor], num_entities: int, num_atoms: int,
                        edge_types: list[str], dim: int | None) -> None:
    """Every tensor of ``tensors.safetensors`` against the node counts of ``graph.json``."""
    n = num_entities + num_atoms
    crow = _vector(file, t, "adj_crow", n + 1)  # [N + 1] CSR row pointers
    col = _vector(file, t, "adj_col")  # [nnz]
    _vector(file, t, "adj_val", col.numel())  # [nnz]
    if crow.numel() and (int(crow[0]) != 0 or int(crow[-1]) != col.numel() or bool((crow[1:] < crow[:-1]).any())):
        raise damaged(file, "adjacency row pointers are not a valid CSR index for its columns")
    _in_range(file, "adj_col", col, n)
    for name in edge_types:
        src = _vector(file, t, f"{name}_src")
        _vector(file, t, f"{name}_dst", src.numel())
        _vector(file, t, f"{name}_weight", src.numel())
        _in_range(file, f"{name}_src", src, n)
        _in_range(file, f"{name}_dst", t[f"{name}_dst"], n)
    for key, rows in (("atom_embeddings", num_atoms), ("entity_embeddings", num_entities)):
        if key not in t:
            continue
        x = t[key]
        if x.dim() != 2 or x.shape[0] != rows or (dim is not None and x.shape[1] != dim):
            want = f"[{rows}, {dim if dim is not None else 'd'}]"
            raise damaged(file, f"tensor {key!r} has shape {list(x.shape)}, expected {want} "
                                "(one row per node of graph.json)")


def check_synonym_rows(file: Path, t: dict[str, torch.Tensor], num_entities: int) -> None:
    src = _vector(file, t, "syn_rows_src")
    _vector(file, t, "syn_rows_dst", src.numel())
    _vector(file, t, "syn_rows_weight", src.numel())
    _in_range(file, "syn_rows_src", src, num_entities)
    _in_range(file, "syn_rows_dst", t["syn_rows_dst"], num_entities)


def check_count(file: Path, what: str, found: int, expected: Any) -> None:
    if isinstance(expected, int) and found != expected:
        raise damaged(file, f"manifest.json lists {expected} {what}, but {found} are on disk")


def check_graph(graph: Any, where: str | Path) -> None:
    """``check_graph_tensors`` for a graph already in memory (e.g. read from PostgreSQL)."""
    adj = graph.adjacency if graph.adjacency.layout == torch.sparse_csr else graph.adjacency.to_sparse_csr()
    t = {"adj_crow": adj.crow_indices(), "adj_col": adj.col_indices(), "adj_val": adj.values()}
    for name, e in graph.edges.items():
        t.update({f"{name}_src": e.src, f"{name}_dst": e.dst, f"{name}_weight": e.weight})
    for key in ("atom_embeddings", "entity_embeddings"):
        if getattr(graph, key) is not None:
            t[key] = getattr(graph, key)
    dim = graph.atom_embeddings.shape[1] if graph.atom_embeddings is not None and graph.atom_embeddings.dim() == 2 \
        else None
    check_graph_tensors(Path(str(where)), t, graph.num_entities, graph.num_atoms, list(graph.edges), dim)
