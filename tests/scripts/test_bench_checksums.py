"""benchmarks/checksums.py runs end to end at a small size, as a user runs it: it builds an index,
every file of it is listed with a digest, and the digest check it times is the one load runs."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.library.conftest import DOCS
from tests.scripts.test_benchmark_scripts import ROOT, run_script, write_jsonl


def test_bench_checksums_times_the_check_of_every_file(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    write_jsonl(corpus, [{"id": d["doc_id"], "text": d["text"], "title": d.get("title", "")} for d in DOCS])
    index = tmp_path / "index"
    out = run_script([str(ROOT / "benchmarks/checksums.py"), "--corpus", str(corpus), "--repeats", "1",
                      "--index", str(index)], tmp_path).stdout
    listed = json.loads((index / "manifest.json").read_text())["files"]
    on_disk = {p.relative_to(index).as_posix() for p in index.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(listed) == on_disk  # the check covers every file the load reads
    assert re.search(rf"index files: {len(on_disk)}, ", out), out
    assert re.search(r"digest share: [\d.]+% of AtomicRAG.load, [\d.]+% of load_dir", out), out
    assert f"{len(DOCS)} passages" in out
