"""Save and load graphs and atomize results as plain files (no pickle).

Graph folder: ``tensors.safetensors`` (edge lists, CSR arrays, embeddings), ``entities.jsonl``,
``atoms.jsonl`` and ``graph.json`` (sizes, embedder, meta). Atomize folder: ``atoms.jsonl``,
``triples.jsonl``, ``failures.jsonl``, ``result.json``. Every file is written atomically.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from atomicrag.core.artifacts import atomic_path, read_jsonl, write_json_atomic, write_jsonl_atomic
from atomicrag.core.schemas import Atom, AtomizeResult, ChunkFailure, Triple
from atomicrag.graph.structure import EDGE_TYPES, AtomEntityGraph, EdgeList

FORMAT_VERSION = 1


def save_graph(graph: AtomEntityGraph, folder: str | Path) -> None:
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    adj = graph.adjacency.to_sparse_csr() if graph.adjacency.layout != torch.sparse_csr else graph.adjacency
    tensors: dict[str, torch.Tensor] = {
        "adj_crow": adj.crow_indices().contiguous(),
        "adj_col": adj.col_indices().contiguous(),
        "adj_val": adj.values().contiguous(),
    }
    for name, e in graph.edges.items():
        tensors[f"{name}_src"] = e.src.contiguous()
        tensors[f"{name}_dst"] = e.dst.contiguous()
        tensors[f"{name}_weight"] = e.weight.contiguous()
    if graph.atom_embeddings is not None:
        tensors["atom_embeddings"] = graph.atom_embeddings.contiguous()
    if graph.entity_embeddings is not None:
        tensors["entity_embeddings"] = graph.entity_embeddings.contiguous()
    with atomic_path(folder / "tensors.safetensors") as tmp:
        save_file(tensors, str(tmp))
    write_jsonl_atomic(folder / "entities.jsonl",
                       [{"key": k, "text": t} for k, t in zip(graph.entity_keys, graph.entity_texts)])
    write_jsonl_atomic(folder / "atoms.jsonl", [a.to_dict() for a in graph.atoms])
    write_json_atomic(folder / "graph.json", {
        "format_version": FORMAT_VERSION, "num_entities": graph.num_entities, "num_atoms": graph.num_atoms,
        "edge_types": list(graph.edges), "embedder_name": graph.embedder_name,
        "dim": int(graph.atom_embeddings.shape[1]) if graph.atom_embeddings is not None else None,
        "meta": graph.meta,
    })


def load_graph(folder: str | Path) -> AtomEntityGraph:
    """A saved graph; every file is checked (readable, shapes, node-id ranges) and a problem
    raises ``IndexDamagedError`` naming the file."""
    from safetensors.torch import load_file

    from atomicrag.graph.verify import check_graph_tensors, damaged, read_file, read_json_object

    folder = Path(folder)
    gpath = folder / "graph.json"
    info = read_json_object(gpath)
    if info.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{folder}: graph format {info.get('format_version')} is not {FORMAT_VERSION}")
    if not all(isinstance(info.get(k), int) and info[k] >= 0 for k in ("num_entities", "num_atoms")):
        raise damaged(gpath, "num_entities/num_atoms are missing or not counts")
    tpath = folder / "tensors.safetensors"
    t = read_file(tpath, lambda p: load_file(str(p)))
    ents = read_file(folder / "entities.jsonl", lambda p: [{"key": e["key"], "text": e["text"]} for e in read_jsonl(p)])
    atoms = read_file(folder / "atoms.jsonl", lambda p: [Atom.from_dict(d) for d in read_jsonl(p)])
    n = info["num_entities"] + info["num_atoms"]
    if len(ents) != info["num_entities"] or len(atoms) != info["num_atoms"]:
        raise damaged(folder, f"entities.jsonl/atoms.jsonl hold {len(ents)}/{len(atoms)} rows but graph.json says "
                              f"{info['num_entities']}/{info['num_atoms']} (incomplete artifact?)")
    edge_types = list(info.get("edge_types", EDGE_TYPES))
    check_graph_tensors(tpath, t, info["num_entities"], info["num_atoms"], edge_types, info.get("dim"))
    edges = {name: EdgeList(t[f"{name}_src"], t[f"{name}_dst"], t[f"{name}_weight"]) for name in edge_types}
    adj = torch.sparse_csr_tensor(t["adj_crow"], t["adj_col"], t["adj_val"], size=(n, n))
    return AtomEntityGraph(
        entity_keys=[e["key"] for e in ents], entity_texts=[e["text"] for e in ents], atoms=atoms,
        edges=edges, adjacency=adj, atom_embeddings=t.get("atom_embeddings"),
        entity_embeddings=t.get("entity_embeddings"), embedder_name=info.get("embedder_name", ""),
        meta=info.get("meta", {}),
    )


def save_atomize_result(result: AtomizeResult, folder: str | Path) -> None:
    folder = Path(folder)
    write_jsonl_atomic(folder / "atoms.jsonl", [a.to_dict() for a in result.atoms])
    write_jsonl_atomic(folder / "triples.jsonl", [t.to_dict() for t in result.triples])
    write_jsonl_atomic(folder / "failures.jsonl", [f.to_dict() for f in result.failures])
    write_json_atomic(folder / "result.json", {"llm_calls": result.llm_calls, "stats": result.stats})


def load_atomize_result(folder: str | Path) -> AtomizeResult:
    folder = Path(folder)
    info: dict[str, Any] = json.loads((folder / "result.json").read_text())
    return AtomizeResult(
        atoms=[Atom.from_dict(d) for d in read_jsonl(folder / "atoms.jsonl")],
        triples=[Triple(**d) for d in read_jsonl(folder / "triples.jsonl")],
        failures=[ChunkFailure(**d) for d in read_jsonl(folder / "failures.jsonl")],
        llm_calls=int(info.get("llm_calls", 0)),
        stats=dict(info.get("stats", {})),
    )
