"""Node orders that improve the memory locality of SpMM on CPU.

Each nonzero (i, j) of the propagation matrix reads row j of the dense iterate. When neighbours
get nearby labels, consecutive output rows read nearby iterate rows, which then come from cache
instead of memory. Reverse Cuthill–McKee (a BFS order from a peripheral node, via SciPy) does this.
The order only relabels nodes; results are returned in the original node order.
"""
from __future__ import annotations

import torch

from atomicrag.retrieve.propagate.base import PreparedGraph

ORDERS = ("rcm", "degree", "none")


def locality_order(prep: PreparedGraph, method: str = "rcm") -> torch.Tensor:
    """A permutation ``perm[N]`` (new position -> old node id)."""
    n = prep.num_nodes
    if method == "none" or n == 0:
        return torch.arange(n, device=prep.device)
    if method == "degree":
        # hubs first: their iterate rows are read most often and stay hot together
        return torch.argsort(prep.deg, descending=True, stable=True)
    if method != "rcm":
        raise ValueError(f"unknown node order {method!r}; known: {ORDERS}")
    try:
        import numpy as np
        import scipy.sparse as sp
        from scipy.sparse.csgraph import reverse_cuthill_mckee
    except ImportError:  # SciPy missing: keep the original order rather than fail
        return torch.arange(n, device=prep.device)
    a = sp.csr_matrix(
        (
            np.ones(prep.col.numel(), dtype=np.float32),
            prep.col.cpu().numpy().astype(np.int32),
            prep.crow.cpu().numpy().astype(np.int64),
        ),
        shape=(n, n),
    )
    perm = reverse_cuthill_mckee(a, symmetric_mode=True)
    return torch.as_tensor(perm.astype(np.int64), device=prep.device)
