"""Every record says how it was made (``harness/provenance.py``): these checks fail when a part of
the provenance is missing, wrong or silently skipped."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import torch

from atomicrag.core.compose import load_config
from atomicrag.embed.memo import MemoEmbedder
from atomicrag.harness.metrics_file import RunMetrics
from atomicrag.harness.provenance import Provenance, files_record

ROOT = Path(__file__).resolve().parents[2]


def test_provenance_names_command_config_commit_data_and_machine(tmp_path: Path) -> None:
    data = tmp_path / "questions.dev.jsonl"
    data.write_text('{"id": "q1"}\n')
    cfg = load_config({"embedder": "fake", "llm": "fake", "retriever": "hybrid"})
    prov = Provenance.start(["scripts/bench_x.py", "--half", "odd", "--note", "two words"])
    rec = prov.finish(cfg, data_files=[data], uses_llm=True)
    json.dumps(rec)  # JSON-ready as is
    assert rec["argv"][1:3] == ["--half", "odd"]
    assert rec["command"] == "python scripts/bench_x.py --half odd --note 'two words'"  # re-runnable as shown
    assert rec["config"]["retriever"]["name"] == cfg.retriever.name  # the whole composed config
    assert rec["config"]["llm"]["name"] == "fake" and "reader" in rec["config"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert rec["git"]["commit"] == head and isinstance(rec["git"]["dirty"], bool)
    assert rec["data_files"] == {str(data): {"sha256": hashlib.sha256(data.read_bytes()).hexdigest(), "bytes": 13}}
    assert rec["models"]["llm"]["name"] == "fake" and rec["models"]["embedder"]["name"] == "fake"
    m = rec["machine"]
    assert m["cores"] >= 1 and m["torch"] == torch.__version__ and isinstance(m["native_bf16"], bool) and m["cpu"]
    assert rec["started_at"] <= rec["finished_at"]
    # an LLM the run did not use is not claimed
    assert "llm" not in prov.finish(cfg, uses_llm=False)["models"]


def test_a_data_file_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        Provenance.start([]).finish(None, data_files=[tmp_path / "missing.jsonl"])


def test_a_model_folder_is_hashed_by_its_weight_files(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "README.md").write_text("not a weight file")
    rec = files_record([tmp_path])
    assert list(rec) == [str(tmp_path / "model.safetensors")]
    assert rec[str(tmp_path / "model.safetensors")]["sha256"] == hashlib.sha256(b"weights").hexdigest()


def test_metrics_json_keeps_the_provenance_key() -> None:
    """A metrics.json with provenance round-trips; older files without it still read."""
    folder = next(ROOT.glob("results/**/metrics.json"))
    data = json.loads(folder.read_text())
    data.pop("provenance", None)  # a file from before provenance (and the run plan) was recorded
    data.pop("plan", None)
    assert "provenance" not in RunMetrics.from_dict(data, str(folder)).to_dict()
    data["provenance"] = {"command": "python -m atomicrag.run"}
    assert RunMetrics.from_dict(data, str(folder)).to_dict()["provenance"] == data["provenance"]
    assert list(RunMetrics.from_dict(data, str(folder)).to_dict())[-1] == "provenance"


class CountingEmbedder:
    name, dim = "counting", 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        self.calls.append(list(texts))
        return torch.tensor([[float(len(t)), 1.0 if is_query else 0.0] for t in texts])


def test_memo_embedder_encodes_each_text_once_per_role() -> None:
    inner = CountingEmbedder()
    memo = MemoEmbedder(inner)
    first = memo.encode(["a", "bb", "a"])
    again = memo.encode(["bb", "a"])
    assert inner.calls == [["a", "bb"]] and memo.encoded == 2
    assert torch.equal(again, first[[1, 0]])
    q = memo.encode(["a"], is_query=True)  # a query vector is not a passage vector
    assert q[0, 1] == 1.0 and inner.calls[-1] == ["a"]
    memo.seed_passages([("ccc", torch.tensor([9.0, 9.0]))])
    assert memo.encode(["ccc"])[0, 0] == 9.0 and len(inner.calls) == 2  # seeded: not encoded
    memo.clear()
    memo.encode(["a"])
    assert inner.calls[-1] == ["a"]  # cleared: encoded cold again


def test_dirty_means_code_changed_not_a_record_being_rewritten(tmp_path: Path) -> None:
    """A command that rewrites its committed record under results/ still ran committed code; an
    edited source file makes the checkout dirty."""
    from atomicrag.harness.provenance import git_state

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "plan.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "results" / "plan.json").write_text('{"calls": 3}')
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_state(tmp_path)["dirty"] is True
