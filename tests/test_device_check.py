"""The device check runs on the lent GPU machine's bare image: CI emulates that image with a venv
holding only the image's packages (scripts/device/emulate_device_image.py) plus the wheelhouse the check
carries, so an import the image lacks fails here, not after minutes of lease."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "device"))

from emulate_device_image import IMAGE_LIST, installed, local_needs, normalize, read_names  # noqa: E402

WHEELHOUSE_LIST = ROOT / "scripts" / "device" / "device_wheelhouse.txt"
SITE = Path(sysconfig.get_paths()["purelib"])
# what the project's code and the check's scripts must never import: not in the image, not carried
NOT_THERE = ("omegaconf", "hydra", "igraph", "jsonschema", "bm25s", "spacy", "faiss", "vllm", "yaml_include")


def image_python(tmp: Path, with_wheelhouse: bool) -> Path:
    args = [sys.executable, str(ROOT / "scripts" / "device" / "emulate_device_image.py"), str(tmp / "venv")]
    if with_wheelhouse:
        args += ["--also", str(WHEELHOUSE_LIST)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120)
    return Path(out.stdout.strip().splitlines()[-1])


def run_check(python: Path, out: Path, *args: str, timeout: int = 900) -> tuple[subprocess.CompletedProcess, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYTHON=str(python), OUT=str(out), WHEELS=str(out / "no-wheelhouse"))
    proc = subprocess.run(["bash", "scripts/device_check.sh", "--small", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").is_file() else ""
    return proc, summary


def test_the_image_emulation_lacks_what_the_image_lacks(tmp_path: Path) -> None:
    py = image_python(tmp_path, with_wheelhouse=False)
    probe = f"import importlib.util as u; print([m for m in {NOT_THERE!r} if u.find_spec(m)])"
    found = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True, env={}).stdout
    assert found.strip() == "[]"
    have = subprocess.run([str(py), "-c", "import torch, numpy, scipy, transformers, safetensors; print('ok')"],
                          capture_output=True, text=True, check=True, env={}).stdout
    assert have.strip() == "ok"


def test_the_gpu_kernels_import_and_run_with_the_image_alone(tmp_path: Path) -> None:
    """PPR (propagation and the float64 exact solve), the synonym KNN and the embedders' batching
    and clamp import with the image's packages: no omegaconf, hydra, igraph at import time."""
    py = image_python(tmp_path, with_wheelhouse=False)
    code = f"""
import sys, torch
from atomicrag.retrieve.propagate import PPR, propagate_topk, topk_atoms
from atomicrag.graph.synonyms import synonym_edges
from atomicrag.embed.encoders import TransformersEmbedder, clamp_max_length, length_batches
n = 50
i = torch.arange(n - 1)
idx = torch.stack([torch.cat([i, i + 1]), torch.cat([i + 1, i])])
adj = torch.sparse_coo_tensor(idx, torch.ones(2 * n - 2), (n, n)).coalesce().to_sparse_csr()
seeds = torch.zeros(3, n); seeds[0, 0] = seeds[1, 10] = seeds[2, 49] = 1
exact = PPR(restart=0.3, max_iter=1000, tol=1e-12, solver="power", dtype=torch.float64, stop="accuracy")(adj, seeds)
vals, atoms = propagate_topk(PPR(restart=0.3), adj, seeds, 25, 5)
e = synonym_edges(["alpha one", "alpha onee", "beta two"], torch.tensor([[1., 0], [0.99, 0.1], [0, 1.]]),
                  threshold=0.8, max_neighbors=5, min_alnum=4, batch=8, device="cpu")
assert exact.dtype == torch.float64 and atoms.shape == (3, 5) and e.src.tolist() == [0]
assert list(length_batches([3, 5, 5], 2, equal=True)) == [[1, 2], [0]]
print(sorted(m for m in sys.modules if m.split(".")[0] in {NOT_THERE!r}))
"""
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=300, check=False,
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_step_limits_fit_one_call() -> None:
    """The GPU mode's limits add up to at most 420 s (one call runs 600 s at most; the lease is
    15 minutes with the machine's start)."""
    text = (ROOT / "scripts" / "device_check.sh").read_text()
    block = re.search(r'STEPS="(.*?)"\n', text, re.S).group(1)
    limits = {line.split(":")[0]: int(line.split(":")[1]) for line in block.splitlines()}
    assert set(limits) == {"env", "wheels", "exact_ppr", "ppr_batch", "embed", "knn", "harness", "memory"}
    assert sum(limits.values()) <= 420


def test_the_wheelhouse_closes_the_image() -> None:
    """Every unconditional need of a wheelhouse package is in the image or the wheelhouse, and the
    pins are the versions installed here (what CI's emulation imports)."""
    image, wheels = set(read_names(IMAGE_LIST)), read_names(WHEELHOUSE_LIST)
    have = installed(SITE)
    pins = {normalize(line.split("==")[0]): line.split("==")[1].split()[0]
            for line in WHEELHOUSE_LIST.read_text().splitlines() if "==" in line and not line.startswith("#")}
    for name in wheels:
        assert name in have, f"{name} (scripts/device/device_wheelhouse.txt) is not installed here"
        assert have[name].name.startswith(f"{have[name].name.split('-')[0]}-{pins[name]}"), (name, have[name])
    from emulate_device_image import requirements

    for name in wheels:
        for req in requirements(have[name]):
            assert req in image or req in wheels, f"{name} needs {req}: neither in the image nor in the wheelhouse"


def test_the_project_imports_none_of_the_local_version_needs() -> None:
    """The emulation links what this machine's newer versions need (httpx2 for huggingface-hub 2...):
    the project must not import those, or CI would pass an import the image lacks."""
    needs = local_needs(SITE, sorted(set(read_names(IMAGE_LIST)) | set(read_names(WHEELHOUSE_LIST))))
    modules = {n.replace("-", "_") for n in needs} | {"pydantic"}
    files = [*ROOT.joinpath("atomicrag").rglob("*.py"), ROOT / "benchmarks/device.py",
             ROOT / "benchmarks/retrieval.py", ROOT / "benchmarks/synthetic_graphs.py"]
    pat = re.compile(r"^\s*(?:from|import)\s+({})\b".format("|".join(sorted(modules))), re.M)
    hits = [f"{f.relative_to(ROOT)}: {m.group(0).strip()}" for f in files for m in pat.finditer(f.read_text())]
    assert hits == []


def test_the_wheelhouse_builder_asks_for_the_devices_python() -> None:
    proc = subprocess.run(["bash", "scripts/device/build_device_wheelhouse.sh", "/tmp/unused"], cwd=ROOT,
                          env={**os.environ, "DRY_RUN": "1"}, capture_output=True, text=True, check=True, timeout=60)
    downloads = [line for line in proc.stdout.splitlines() if " pip download " in line]
    assert len(downloads) == len(read_names(WHEELHOUSE_LIST))
    assert all("--python-version 3.12" in d and "--only-binary=:all:" in d and "--no-deps" in d for d in downloads)


@pytest.mark.slow
def test_a_step_that_cannot_run_fails_and_the_rerun_runs_only_it(tmp_path: Path) -> None:
    """Without the wheelhouse the harness step cannot import the config: it FAILS (rc 1), it is not
    skipped; ``--rerun`` of that summary runs it (and env, wheels) alone."""
    py = image_python(tmp_path, with_wheelhouse=False)
    first, summary = run_check(py, tmp_path / "a", "--only=harness,knn", timeout=600)
    assert first.returncode == 1, first.stdout + first.stderr
    assert re.search(r"^\[harness\] FAIL rc=1 ", summary, re.M), summary
    with tarfile.open(tmp_path / "a" / "device_check.tar.gz") as tar:
        log = tar.extractfile("./harness.log").read().decode()
    # the harness imports Hydra's stack first (omegaconf or hydra, whichever its config module reaches first)
    assert re.search(r"No module named '(hydra|omegaconf)'", log), log
    assert re.search(r"^\[knn\] PASS", summary, re.M), summary
    again, summary2 = run_check(py, tmp_path / "b", f"--rerun={tmp_path / 'a' / 'summary.txt'}", timeout=600)
    assert again.returncode == 1
    ran = re.findall(r"^\[([a-z_]+)\]", summary2, re.M)
    assert ran == ["env", "wheels", "harness"], summary2


@pytest.mark.slow
def test_device_check_dry_run_passes_in_the_emulated_image(tmp_path: Path) -> None:
    """Every step of the device check, at the CPU dry run's sizes, in a venv of the image's packages
    plus the wheelhouse's: each PASSes with its figure, and the logs come back in one archive."""
    py = image_python(tmp_path, with_wheelhouse=True)
    out = tmp_path / "out"
    proc, summary = run_check(py, out)
    assert proc.returncode == 0, summary + proc.stderr[-3000:]
    for name in ("env", "wheels", "exact_ppr", "ppr_batch", "embed", "knn", "harness", "memory"):
        assert re.search(rf"^\[{name}\] PASS", summary, re.M), summary
    assert "top25_identical=16/16 dtype=torch.float64" in summary
    assert re.search(r"ratio_vs_igraph=[0-9.]+ top25_agreement=1\.0000", summary)
    assert "clamp=64 ok" in summary and "devices {'embedder': 'cpu', 'graph': 'cpu', 'retriever': 'cpu'}" in summary
    assert sorted(p.name for p in out.iterdir()) == ["device_check.tar.gz", "summary.txt"]
    with tarfile.open(out / "device_check.tar.gz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"env.log", "wheels.log", "exact_ppr.log", "ppr_batch.log", "embed.log", "knn.log", "harness.log",
            "memory.log", "summary.txt"} <= names


def _tiny_wheelhouse(tmp: Path) -> Path:
    """A wheelhouse of one pure-Python wheel built here (no index), with its checksums."""
    proj = tmp / "proj"
    (proj / "devcheck_probe").mkdir(parents=True)
    (proj / "devcheck_probe" / "__init__.py").write_text("VALUE = 46\n")
    (proj / "pyproject.toml").write_text('[project]\nname = "devcheck-probe"\nversion = "1.0"\n'
                                         '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    house = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(house), str(proj)], check=True, capture_output=True, timeout=300)
    subprocess.run("sha256sum ./*.whl > SHA256SUMS", shell=True, cwd=house, check=True)
    return house


@pytest.mark.slow
def test_the_wheelhouse_is_checked_and_installed_beside_the_image(tmp_path: Path) -> None:
    """The wheels step verifies the checksums, installs with pip --no-index into a folder first on
    PYTHONPATH (the image's packages stay visible), and a damaged wheelhouse FAILS the step."""
    house = _tiny_wheelhouse(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYTHON=sys.executable, OUT=str(tmp_path / "ok"), WHEELS=str(house))
    ok = subprocess.run(["bash", "scripts/device_check.sh", "--small", "--only=none"], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=600, check=False)
    summary = (tmp_path / "ok" / "summary.txt").read_text()
    assert ok.returncode == 0 and re.search(r"^\[wheels\] PASS .*wheels installed: 1 into ", summary, re.M), summary
    whl = next(house.glob("*.whl"))
    whl.write_bytes(whl.read_bytes() + b"x")
    env["OUT"] = str(tmp_path / "bad")
    bad = subprocess.run(["bash", "scripts/device_check.sh", "--small", "--only=none"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    summary = (tmp_path / "bad" / "summary.txt").read_text()
    assert bad.returncode == 1 and re.search(r"^\[wheels\] FAIL .*checksums differ", summary, re.M), summary
