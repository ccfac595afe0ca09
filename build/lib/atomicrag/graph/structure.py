"""The Atom-Entity Graph as tensors.

Node order is fixed: entity nodes first (``0 .. E-1``), then atom nodes (``E .. E+A-1``), so
the atom scores of a propagation result are the slice ``scores[:, E:]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from atomicrag.core.schemas import Atom

EDGE_TYPES = ("containment", "relevance", "synonym")


@dataclass
class EdgeList:
    """Undirected edges of one type, each pair once with ``src < dst`` (global node ids)."""

    src: torch.Tensor  # [M] int64
    dst: torch.Tensor  # [M] int64
    weight: torch.Tensor  # [M] float32

    def __len__(self) -> int:
        return int(self.src.numel())

    @classmethod
    def empty(cls) -> EdgeList:
        z = torch.zeros(0, dtype=torch.int64)
        return cls(z, z.clone(), torch.zeros(0, dtype=torch.float32))


@dataclass
class AtomEntityGraph:
    entity_keys: list[str]  # canonical key of each entity node
    entity_texts: list[str]  # a surface form of each entity (first seen)
    atoms: list[Atom]  # atom nodes, in node order after the entities
    edges: dict[str, EdgeList]  # by type: containment | relevance | synonym
    adjacency: torch.Tensor  # sparse CSR [N, N] float32, symmetric, the combined weights
    atom_embeddings: torch.Tensor | None = None  # [A, d] float32, L2-normalised
    entity_embeddings: torch.Tensor | None = None  # [E, d] float32, L2-normalised
    embedder_name: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def num_entities(self) -> int:
        return len(self.entity_keys)

    @property
    def num_atoms(self) -> int:
        return len(self.atoms)

    @property
    def num_nodes(self) -> int:
        return self.num_entities + self.num_atoms
