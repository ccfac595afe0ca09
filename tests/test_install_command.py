"""The README's install command, run as written in fresh virtual environments, offline.

Two package indexes are stood in for by local PEP 503 folders: "PyPI" holds this project's wheel
(under its distribution name) and a newer torch **without** a ``+cpu`` label, which is what PyPI's
Linux torch is (a CUDA build with ``nvidia-*`` packages); PyTorch's CPU index is an address nothing
answers. The command's URLs are swapped for these, nothing else in it changes.

- Torch already installed (the CPU build this suite runs on, reused from disk): the command
  installs the project and keeps that torch; the newer "CUDA" torch on "PyPI" is not taken.
- No torch and PyTorch's CPU index unreachable: the command fails and installs nothing, instead of
  falling back to "PyPI"'s CUDA torch (what ``pip install "atomicrag[cpu]" --extra-index-url …``
  did: the issue's 2.95 GB of ``nvidia-*`` packages).

The other packages come from this test environment through a ``.pth`` line (as
``test_architecture`` does), so nothing is downloaded; ``tests/test_install.py`` (opt-in)
installs every dependency from the real index.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
UNREACHABLE = "http://127.0.0.1:9/whl/cpu"  # port 9 (discard): connection refused at once
_BLOCK = re.compile(r"<!-- install:cpu -->\s*```bash\n(.*?)```", re.DOTALL)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def dist_name() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]


def install_command() -> str:
    """The ``pip install`` lines of the README's install block (after the ``<!-- install:cpu -->``
    marker), comments dropped; ``atomicrag setup`` after them is tests/library/test_setup_and_readiness.py's."""
    m = _BLOCK.search(README.read_text(encoding="utf-8"))
    assert m, "README has no <!-- install:cpu --> bash block"
    lines = [ln.split(" #")[0].strip() for ln in m.group(1).splitlines()]
    return "\n".join(ln for ln in lines if ln.startswith("pip install"))


def test_readme_installs_this_project_by_its_distribution_name() -> None:
    cmd = install_command()
    assert len(cmd.splitlines()) == 2, cmd
    assert f'"{dist_name()}[cpu]"' in cmd
    assert dist_name() != "atomicrag"  # the index's "atomicrag" is another project
    # the CPU torch comes from PyTorch's CPU index alone: with --extra-index-url an unreachable
    # index leaves PyPI's CUDA build as the only candidate
    assert f"--index-url {CPU_INDEX}" in cmd and "--extra-index-url" not in cmd


def _fake_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal installable wheel of ``name`` (a stand-in: it only has to be found and chosen)."""
    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(f"{name}/__init__.py", f"__version__ = {version!r}\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return whl


def _simple_index(root: Path, wheels: dict[str, Path]) -> str:
    """A PEP 503 index folder: ``<root>/<project>/index.html`` linking each wheel."""
    for project, whl in wheels.items():
        d = root / project
        d.mkdir(parents=True, exist_ok=True)
        (d / "index.html").write_text(f'<html><body><a href="{whl.as_uri()}">{whl.name}</a></body></html>\n')
    return root.as_uri()


@pytest.fixture(scope="module")
def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600, cwd=out)
    assert build.returncode == 0, build.stderr[-3000:]
    import shutil

    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' staging folder in the checkout
    (whl,) = out.glob("*.whl")
    return whl


def _fresh_env(tmp: Path, *, with_torch: bool) -> Path:
    """A new venv whose other packages are this test environment's (a folder of links to them,
    torch and ``nvidia-*`` left out unless ``with_torch``), added by a ``.pth`` line."""
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # ensurepip's old setuptools would shadow this environment's (torch asks for a newer one)
    subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], capture_output=True,
                   env=_clean_env())
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    here = Path(sysconfig.get_paths()["purelib"])
    links = tmp / "deps"
    links.mkdir()
    for entry in here.iterdir():
        low = entry.name.lower()
        if (low.startswith(("atomicrag", "__editable__", "pip", "_distutils_hack", "distutils-precedence"))
                or (not with_torch and low.startswith(("torch", "nvidia")))):
            continue
        (links / entry.name).symlink_to(entry)
    Path(site, "test-env-deps.pth").write_text(f"{links}\n")
    return env_dir


def _clean_env() -> dict[str, str]:
    """This process's environment without what points at the checkout or this machine's pip set-up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _run_command(cmd: str, env_dir: Path, pypi: str, cpu_index: str) -> subprocess.CompletedProcess[str]:
    cmd = cmd.replace(CPU_INDEX, cpu_index)
    env = _clean_env()
    env.update(PATH=f"{env_dir / 'bin'}:{env['PATH']}", PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi,
               PIP_RETRIES="0", PIP_TIMEOUT="5", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], capture_output=True, text=True,
                          timeout=600, env=env, cwd=env_dir)


def _installed(env_dir: Path) -> dict[str, str]:
    out = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
                         capture_output=True, text=True, check=True, env=_clean_env()).stdout
    return dict(line.split("==", 1) for line in out.splitlines() if "==" in line)


def _fake_pypi(tmp: Path, wheel: Path) -> str:
    # a newer torch without a local label: PyPI's Linux torch, the CUDA build
    cuda_torch = _fake_wheel(tmp / "pypi-files", "torch", "99.0.0")
    return _simple_index(tmp / "pypi", {"torch": cuda_torch, dist_name(): wheel})


def test_install_command_keeps_the_cpu_torch_and_installs_the_project(tmp_path: Path, project_wheel: Path) -> None:
    env_dir = _fresh_env(tmp_path, with_torch=True)
    import torch

    before = _installed(env_dir)
    assert before["torch"] == torch.__version__
    proc = _run_command(install_command(), env_dir, _fake_pypi(tmp_path, project_wheel), UNREACHABLE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = _installed(env_dir)
    assert after["torch"] == torch.__version__  # not the index's newer "CUDA" torch
    assert after.get(dist_name()) == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert not [p for p in after if p.lower().startswith("nvidia")]
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([str(env_dir / "bin" / "atomicrag"), "--help"], capture_output=True, text=True,
                           cwd=work, env=_clean_env())
    assert where.returncode == 0 and "setup" in where.stdout, where.stderr[-2000:]
    origin = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import atomicrag; print(atomicrag.__file__)"],
                            capture_output=True, text=True, cwd=work, env=_clean_env()).stdout
    assert str(env_dir) in origin  # the installed wheel, not the checkout


def test_install_command_stops_rather_than_take_a_cuda_torch(tmp_path: Path, project_wheel: Path) -> None:
    env_dir = _fresh_env(tmp_path, with_torch=False)
    assert "torch" not in _installed(env_dir)
    proc = _run_command(install_command(), env_dir, _fake_pypi(tmp_path, project_wheel), UNREACHABLE)
    assert proc.returncode != 0, "the command succeeded with PyTorch's CPU index unreachable:\n" + proc.stdout
    after = _installed(env_dir)
    assert "torch" not in after and dist_name() not in after, (after.get("torch"), proc.stdout[-2000:], proc.stderr[-2000:])
