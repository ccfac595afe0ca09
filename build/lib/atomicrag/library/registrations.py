"""The index stores this package provides, by storage name (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import STORES

STORES.add("dir", "atomicrag.library.io:DirStore")
STORES.add("pg", "atomicrag.library.io:PgStore")
