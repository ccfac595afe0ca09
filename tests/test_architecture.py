"""The package's shape is a contract: its layers hold (import-linter), and it installs as a wheel.

- ``lint-imports`` checks pyproject's contracts: faces over the engine over the stages (in
  data-flow order) over the services over core; harness and library independent; no cycles.
- The wheel, installed into a fresh virtual environment outside the checkout (no ``-e``), indexes
  and queries two documents: its presets (``conf/``) ship inside it. The dependencies come from
  the test environment (its site-packages on the path, ``--no-deps``): the test is about the
  package's own files.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is missing: install the dev extra (pip install -e '.[dev]')")
    out = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


UPPER = ("answer", "atomize", "data", "embed", "engine", "evaluate", "graph", "harness", "library", "llm",
         "prompts", "retrieve", "run")


def _code_strings(path: Path) -> list[str]:
    """String constants of a module's code (docstrings excluded: they may point at callers)."""
    import ast

    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_core_names_no_module_above_it() -> None:
    """import-linter sees imports, not ``importlib`` paths: a registry table of module strings in
    ``core`` would tie it to every layer. Registrations live in each package's ``registrations``."""
    # a command in a message (``python -m atomicrag.run``) names no module to import
    pattern = __import__("re").compile(r"(?<!-m )\batomicrag\.(" + "|".join(UPPER) + r")\b")
    found = [(p.name, s) for p in sorted((ROOT / "atomicrag" / "core").glob("*.py"))
             for s in _code_strings(p) if pattern.search(s)]
    assert not found, found


def test_every_registered_path_imports_from_its_own_package() -> None:
    from atomicrag.core import registry

    kinds = [v for v in vars(registry).values() if isinstance(v, registry.Registry)]
    for reg in kinds:
        for name in reg.names():
            obj = reg.get(name)  # every registered path resolves
            assert callable(obj), (reg.kind, name)


STAGES = ("answer", "atomize", "data", "embed", "evaluate", "graph", "llm", "prompts", "retrieve")


def test_engine_api_names_resolve_into_the_stages() -> None:
    """``atomicrag.engine.api`` is the faces' whole hold on the stages (the faces-through-engine
    contract): every name its ``TYPE_CHECKING`` block imports is in its table (renamed imports under
    their new name), and resolves into a stage or service package, to the attribute imported."""
    import importlib

    from atomicrag.engine import api

    assert len(api._EXPORTS) > 50  # the block was found and read whole
    assert api._EXPORTS["resident_status"] == ("atomicrag.llm.resident", "status")  # an `as` import
    assert set(api.__all__) == set(api._EXPORTS) == set(dir(api))
    for name, (module, attr) in api._EXPORTS.items():
        assert module.split(".")[1] in STAGES, (name, module)
        assert getattr(api, name) is getattr(importlib.import_module(module), attr), name
    with pytest.raises(AttributeError):
        api.no_such_name  # noqa: B018 - the look-up is the test


def test_importing_engine_api_loads_no_stage() -> None:
    """Importing the table reads it from the module's source; it imports no stage and no torch
    (the CLI and ``import atomicrag`` stay cheap)."""
    code = ("import sys; import atomicrag.engine.api as api; assert api._EXPORTS; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.split('.')[:2] in "
            f"[['atomicrag', s] for s in {list(STAGES)!r}]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_engine_api_looks_names_up_when_asked() -> None:
    """A patch of the stage's own attribute is what a face importing the name afterwards gets (the
    tests patch ``atomicrag.llm.resident.find_resident`` and the CLI must see it)."""
    import atomicrag.llm.resident as resident
    from atomicrag.engine import api

    original = resident.find_resident
    try:
        resident.find_resident = lambda model: "patched"  # type: ignore[assignment]
        from atomicrag.engine.api import find_resident

        assert find_resident("m") == "patched"
    finally:
        resident.find_resident = original  # type: ignore[assignment]
    assert api.find_resident is original


_SMOKE = r"""
import json, sys
from pathlib import Path
import atomicrag
from atomicrag import AtomicRAG
from atomicrag.core.compose import CONF_DIR

pkg = Path(atomicrag.__file__).resolve().parent
rag = AtomicRAG({"llm": "fake", "embedder": "fake", "reader": {"name": "none"}}, progress=False)
rag.index(["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."])
res = rag.query("Where was Marie Curie born?")
# the smoke sets and the paper's numbers ship in the wheel: a benchmark loads and a table builds
from atomicrag.core.config import DatasetConfig, PathsConfig
from atomicrag.data import load_dataset
from atomicrag.harness.report_tables import make_tables

ds = DatasetConfig()  # 2wikimultihopqa, smoke
data = load_dataset(ds, PathsConfig().resolved_data_dir(dataset=ds))
tables = make_tables(Path("results"), tables=["table2"], plots=False)
print(json.dumps({"package": str(pkg), "conf": str(CONF_DIR), "n_items": len(res.items),
                  "top": res.items[0].text if res.items else "", "questions": len(data.questions),
                  "passages": len(data.passages), "data_file": data.files[0],
                  "table2_has_paper": "73.2" in tables["table2"]["md"].read_text()}))
"""


@pytest.mark.slow
def test_wheel_installs_outside_the_checkout_and_answers(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("atomicrag_harness-*.whl")
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' staging folder in the checkout

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the test environment's packages after the fresh environment's own (a .pth line adds a path;
    # it does not run that folder's .pth files, so the checkout's editable hook stays out)
    Path(site, "test-env-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--no-index", "--target", site, str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", ATOMICRAG_NO_PROGRESS="1")
    run = subprocess.run([str(py), "-c", _SMOKE], cwd=work, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    import json

    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["package"]).is_relative_to(Path(site))  # the installed copy, not the checkout
    assert Path(got["conf"]) == Path(got["package"]) / "conf"
    assert got["n_items"] > 0 and "Warsaw" in got["top"]
    assert (got["questions"], got["passages"]) == (20, 130) and Path(got["data_file"]).is_relative_to(Path(site))
    assert got["table2_has_paper"]  # the published numbers came from the installed package
