"""Where the library writes when the config keeps the harness's relative defaults: the user's
cache folder, never the working folder (issue #48: ``./cache/servers/*.log`` after a query)."""
from __future__ import annotations

import dataclasses
from typing import Any


def library_paths(paths: Any) -> Any:
    """``paths`` for the library: the harness's relative defaults (``cache/`` beside a checkout:
    the LLM cache, server logs, concatenated model files) go to the user's cache folder instead
    (``core.user_cache``: ``$XDG_CACHE_HOME/atomicrag`` or ``~/.cache/atomicrag``), so a query or
    ``serve`` run anywhere leaves nothing in the working folder; a path the user set is kept."""
    from atomicrag.core.config import PathsConfig
    from atomicrag.core.user_cache import user_cache_dir

    default, home = PathsConfig(), user_cache_dir()
    moved = {}
    if paths.llm_cache == default.llm_cache:
        moved["llm_cache"] = str(home / "llm_cache.sqlite")
    if paths.cache_dir == default.cache_dir:
        moved["cache_dir"] = str(home)
    return dataclasses.replace(paths, **moved) if moved else paths
