"""Field checks of the config dataclasses.

Every field of a config dataclass (``atomicrag.core.config``, ``atomicrag.core.config_query``, a
face's own sections) is checked in its ``__post_init__`` through these helpers, before any work
starts. Each helper records the fields it looked at in
``CHECKED``, so tests/test_config.py can walk every config dataclass and fail on a field nobody
checks: a new field needs a range, a choice, or an explicit ``text`` (free text) declaration.
"""
from __future__ import annotations

import re
from dataclasses import field, fields
from typing import Any, get_args

CHECKED: dict[str, set[str]] = {}
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY_PREFIXES = ("sk-", "sk_", "hf_", "gsk_", "xai-", "pk-", "rk-", "ghp_", "github_pat_", "AKIA", "AIza")


def mark(obj: Any, names: tuple[str, ...]) -> None:
    CHECKED.setdefault(type(obj).__name__, set()).update(names)


def choice(obj: Any, name: str, allowed: tuple[str, ...]) -> None:
    mark(obj, (name,))
    value = getattr(obj, name)
    if value not in allowed:
        raise ValueError(
            f"{type(obj).__name__}.{name}={value!r} is not one of {', '.join(repr(a) for a in allowed)}"
        )


def mode(kind: Any, default: str) -> Any:
    """A field whose value is one of a ``Literal``'s strings: ``mode(Literal["restart", "continue"],
    "restart")``. OmegaConf cannot type a field as a ``Literal``, so the field is a ``str`` to it and
    the ``Literal`` is kept in the field's metadata: the one place its choices are written, checked
    by ``check_modes`` and readable by code and docs (``modes(cls)``)."""
    choices = get_args(kind)
    if not choices or default not in choices:
        raise ValueError(f"mode {kind!r}: the default {default!r} must be one of its values")
    return field(default=default, metadata={"choices": choices})


def modes(cls: Any) -> dict[str, tuple[str, ...]]:
    """``{field: its choices}`` of every mode field of a config dataclass."""
    return {f.name: f.metadata["choices"] for f in fields(cls) if "choices" in f.metadata}


def check_modes(obj: Any) -> None:
    """Every mode field of ``obj`` holds one of its ``Literal``'s values."""
    for name, allowed in modes(obj).items():
        choice(obj, name, allowed)


def _number(obj: Any, name: str) -> Any:
    value = getattr(obj, name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{type(obj).__name__}.{name}={value!r} must be a number")
    return value


def positive(obj: Any, *names: str) -> None:
    mark(obj, names)
    for name in names:
        value = _number(obj, name)
        if value is not None and value <= 0:
            raise ValueError(f"{type(obj).__name__}.{name}={value!r} must be > 0")


def unit(obj: Any, *names: str) -> None:
    in_range(obj, 0.0, 1.0, *names)


def in_range(obj: Any, lo: float | None, hi: float | None, *names: str) -> None:
    """``lo <= value <= hi`` (either bound may be None = open); None values pass (optional fields)."""
    mark(obj, names)
    for name in names:
        value = _number(obj, name)
        if value is None:
            continue
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            want = f"lie in [{lo}, {hi}]" if lo is not None and hi is not None else (
                f"be >= {lo}" if lo is not None else f"be <= {hi}")
            raise ValueError(f"{type(obj).__name__}.{name}={value!r} must {want}")


def text(obj: Any, *names: str, nonempty: bool = False) -> None:
    """Free text (model ids, paths, prefixes): declared checked; must be a string (or None)."""
    mark(obj, names)
    for name in names:
        value = getattr(obj, name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{type(obj).__name__}.{name}={value!r} must be a string")
        if nonempty and not value.strip():
            raise ValueError(f"{type(obj).__name__}.{name} must not be empty")


def text_list(obj: Any, *names: str) -> None:
    mark(obj, names)
    for name in names:
        value = getattr(obj, name)
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"{type(obj).__name__}.{name} must be a list of strings")


def device(obj: Any, *names: str) -> None:
    mark(obj, names)
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, str) or not _DEVICE.match(value):
            raise ValueError(f"{type(obj).__name__}.{name}={value!r} is not a device: auto, cpu, cuda, cuda:N or mps")


def path_name(obj: Any, *names: str) -> None:
    """A name that becomes one folder of a path: no separators, no '..' (it must stay inside results/)."""
    mark(obj, names)
    for name in names:
        value = getattr(obj, name)
        if value is None:
            continue
        if (not isinstance(value, str) or not value.strip() or "/" in value or "\\" in value or ".." in value
                or "\0" in value or value.startswith("~")):
            raise ValueError(f"{type(obj).__name__}.{name}={value!r} must be a plain folder name "
                             "(no '/', '\\', '..' or leading '~')")


def looks_like_secret(value: str) -> bool:
    """True for strings shaped like an API key rather than an environment variable's name."""
    if value.startswith(_KEY_PREFIXES) or not _ENV_NAME.match(value):
        return True
    # names are words joined by underscores; long runs of mixed-case letters and digits are keys
    return len(value) >= 24 and "_" not in value and any(c.isdigit() for c in value)


def env_name(obj: Any, name: str) -> None:
    mark(obj, (name,))
    value = getattr(obj, name)
    if value is None or value == "":
        return
    if not isinstance(value, str) or looks_like_secret(value):
        # never echo the value: it may be the key itself, and this message may end up in logs
        raise ValueError(f"{type(obj).__name__}.{name} must be the NAME of an environment variable "
                         "(e.g. OPENAI_API_KEY), and the value given looks like an API key; put the key in "
                         "that variable instead of the config")


