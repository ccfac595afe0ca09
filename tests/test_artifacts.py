"""Stage caches: keys depend on exactly their inputs; writes are atomic."""
from __future__ import annotations

import pytest

from atomicrag.core.artifacts import StageCache, atomic_path, content_hash, read_jsonl, write_jsonl_atomic


def test_hash_is_order_independent_for_dict_keys_and_sensitive_to_values() -> None:
    assert content_hash({"a": 1, "b": 2}) == content_hash({"b": 2, "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})
    assert content_hash("ab", "c") != content_hash("a", "bc")  # parts are length-prefixed


def test_failed_write_leaves_no_file(tmp_path) -> None:
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("crash mid-write")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_stage_is_complete_only_after_manifest(tmp_path) -> None:
    cache = StageCache(tmp_path, "ds", "atomize", "k1")
    cache.begin()
    write_jsonl_atomic(cache.path("atoms.jsonl"), [{"id": 1}])
    assert not cache.complete
    cache.finish({"chunks": "h"})
    assert cache.complete and cache.manifest()["inputs"] == {"chunks": "h"}
    assert read_jsonl(cache.path("atoms.jsonl")) == [{"id": 1}]


def test_read_jsonl_names_file_and_line(tmp_path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{bad\n')
    with pytest.raises(ValueError, match=r"x.jsonl:2"):
        read_jsonl(p)
