"""The user's cache folder for everything the project keeps between runs outside a run folder.

``$XDG_CACHE_HOME/atomicrag`` when that variable is set, else ``~/.cache/atomicrag``: the
library's LLM cache and server logs, the converted-model cache, the ``atomicrag setup`` server
environment. Nothing of the library goes to the working folder unless a path is given.
"""
from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/atomicrag``, else ``~/.cache/atomicrag`` (read at each call: tests and
    users may change the variable while a process runs)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "atomicrag"
