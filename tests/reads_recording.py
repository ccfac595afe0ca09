"""A config that notes every field read: what tests/*/test_*_reads.py hold the declared reads to."""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

C = TypeVar("C")


def recording(config: C) -> tuple[C, set[str]]:
    """A copy of the dataclass ``config`` whose field reads after construction are added to the
    returned set (the instance stands wherever the original would be read)."""
    cls = type(config)
    fields = {f.name for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    seen: set[str] = set()

    class Recording(cls):  # type: ignore[misc, valid-type]
        def __getattribute__(self, name: str) -> Any:
            if name in fields and object.__getattribute__(self, "__dict__").get("_recording"):
                seen.add(name)
            return object.__getattribute__(self, name)

    rec = Recording(**{f: getattr(config, f) for f in fields})
    rec.__dict__["_recording"] = True
    return rec, seen
