"""W&B as the research dashboard, in offline mode (no network, no account): a run's config, its
per-stage cost, its paper-table cells beside the published numbers and its per-question rows reach
the run file, and a sweep's runs share one group. The test reads the offline run files back (the
.wandb record log and the table files), not the objects it handed to W&B."""
from __future__ import annotations

import dataclasses
import json
import shutil
import struct
from pathlib import Path

import pytest

wandb = pytest.importorskip("wandb")
from wandb.proto import wandb_internal_pb2 as pb  # noqa: E402

from atomicrag.harness.tracking import WandbSink, run_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "results" / "table2_smoke" / "2wikimultihopqa" / "smoke"


def records(path: Path) -> list[pb.Record]:
    """The records of a .wandb file: a LevelDB-style log (7-byte file header, 32 KiB blocks of
    records with a 7-byte header: crc32, length, type FULL=1 FIRST=2 MIDDLE=3 LAST=4)."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    pos, block, chunks, part = 7, 32768, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:  # zero padding to the block's end
            pos += left
            continue
        body = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            chunks.append(body)
        elif kind == 2:
            part = body
        elif kind == 3:
            part += body
        elif kind == 4:
            chunks.append(part + body)
    out = []
    for body in chunks:
        rec = pb.Record()
        rec.ParseFromString(body)
        out.append(rec)
    return out


def finished_records(run_dir: Path, wait_s: float = 120.0) -> list[pb.Record]:
    """The run file's records once its exit record is written (W&B's service process writes the
    file after ``finish()`` returns)."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        logs = list(run_dir.glob("run-*.wandb"))
        recs = records(logs[0]) if len(logs) == 1 and logs[0].stat().st_size > 7 else []
        if any(r.WhichOneof("record_type") == "exit" for r in recs):
            return recs
        assert time.monotonic() < deadline, f"{run_dir}: no finished run file after {wait_s:.0f} s"
        time.sleep(0.5)


def harness_config(folder: Path, results_dir: Path):
    from omegaconf import OmegaConf

    from atomicrag.core.config import register_configs, to_dataclass
    from atomicrag.core.config_moves import move_fields
    from atomicrag.harness.config import HarnessConfig

    register_configs()
    # a committed run's config, written before the released-code switches moved into their stage
    # sections: read as every saved config is read (core.config_moves.move_fields)
    saved = OmegaConf.create(move_fields(OmegaConf.to_container(OmegaConf.load(folder / "config.yaml"))))
    cfg = to_dataclass(OmegaConf.merge(OmegaConf.structured(HarnessConfig), saved))
    return dataclasses.replace(cfg, paths=dataclasses.replace(cfg.paths, results_dir=str(results_dir)),
                               logger=dataclasses.replace(cfg.logger, name="wandb", mode="offline"))


def log_committed_run(src: Path, tmp: Path) -> tuple[object, dict, list, Path]:
    folder = tmp / "runs" / "table2_smoke" / src.name
    shutil.copytree(src, folder)
    cfg = harness_config(folder, tmp / "runs")
    metrics = json.loads((folder / "metrics.json").read_text())
    predictions = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    sink = WandbSink(cfg)
    sink.log_run(metrics, predictions, folder)
    run_dir = Path(sink.run.dir).parent
    sink.finish()
    return cfg, metrics, predictions, run_dir


def table(run_dir: Path, key: str) -> dict:
    (found,) = sorted((run_dir / "files" / "media" / "table").glob(f"{key}_*.table.json"))
    return json.loads(found.read_text())


@pytest.mark.slow
def test_a_run_and_a_sweep_in_wandb_offline_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    sources = sorted(p.parent for p in SMOKE.glob("*/metrics.json"))[:2]
    assert len(sources) == 2
    groups = []
    for src in sources:
        cfg, metrics, predictions, run_dir = log_committed_run(src, tmp_path / src.name)
        recs = finished_records(run_dir)
        run = next(r.run for r in recs if r.WhichOneof("record_type") == "run")
        groups.append(run.run_group)
        assert run.display_name == run_name(cfg)
        config = {item.key: json.loads(item.value_json) for item in run.config.update}
        assert config["retriever"]["name"] == cfg.retriever.name and config["llm"]["model"] == cfg.llm.model
        summary = {}
        for r in recs:
            if r.WhichOneof("record_type") == "summary":
                summary.update({i.key: i.value_json for i in r.summary.update if i.key})
        assert json.loads(summary["overall/f1"]) == pytest.approx(metrics["overall"]["f1"])
        # per-stage tokens and latency, as metrics.json's cost.modules has them
        stages = table(run_dir, "stages")
        by_stage = {row[0]: dict(zip(stages["columns"], row)) for row in stages["data"]}
        answer = metrics["cost"]["modules"]["answer"]
        assert by_stage["answer"]["prompt_tokens"] == answer["prompt_tokens"]
        assert by_stage["answer"]["llm_latency_s"] == pytest.approx(answer["llm_latency_s"])
        # the paper-table cells this run fills, beside the published numbers
        cells = table(run_dir, "vs_published")
        rows = [dict(zip(cells["columns"], row)) for row in cells["data"]]
        assert rows and all(r["table"] == "table2_smoke" for r in rows)
        assert any(r["measured"] == pytest.approx(metrics["overall"]["f1"]) for r in rows)
        # the row's paper numbers ride along (table2_smoke's are the paper's drops, another metric)
        paper = json.loads((ROOT / "atomicrag" / "published" / "paper_tables.json").read_text())
        published = [r for r in rows if r["measured"] is None]
        assert published and all(isinstance(r["published"], float) for r in published)
        drops = json.dumps(paper["tables"]["table2"])
        assert all(str(r["published"]) in drops for r in published)
        preds = table(run_dir, "predictions")
        assert len(preds["data"]) == len(predictions)
        assert preds["data"][0][0] == predictions[0]["question_id"]
    assert groups == ["table2_smoke", "table2_smoke"]  # the sweep's rows side by side
