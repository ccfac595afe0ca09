"""The CPU Dockerfile builds and runs the quickstart with commands that exist: docker cannot run
here, so each ``atomicrag`` command of it is parsed by the real CLI parser, the extra it installs
is declared in pyproject.toml, and the served index is the one its quickstart builds."""
from __future__ import annotations

import shlex
from pathlib import Path

import tomllib

from atomicrag.library.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def shell_commands() -> list[list[str]]:
    cmds = []
    for word, rest in instructions():
        if word == "RUN":
            cmds += [shlex.split(part) for part in rest.split("&&")]
    return cmds


def test_every_atomicrag_command_parses() -> None:
    parser = build_parser()
    used = [c[1:] for c in shell_commands() if c and c[0] == "atomicrag"]
    cmd = next(rest for word, rest in instructions() if word == "CMD")
    import json

    final = json.loads(cmd)
    assert final[0] == "atomicrag"
    used.append(final[1:])
    assert {u[u[0] == "-q"] for u in used} >= {"setup", "index", "query", "serve"}
    for args in used:
        parser.parse_args(args)  # SystemExit (a test failure) on an unknown command or option


def test_it_installs_the_cpu_extra_from_the_cpu_torch_index() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = [c for c in shell_commands() if c[:2] == ["pip", "install"]]
    assert installs, "the image installs nothing"
    for c in installs:
        spec = c[-1]
        assert spec.startswith("/src[") and set(spec[5:-1].split(",")) <= set(extras)
        assert "https://download.pytorch.org/whl/cpu" in c  # no CUDA torch in a CPU image
    assert any(r.split()[0] == "." for w, r in instructions() if w == "COPY")


def test_it_serves_the_index_its_quickstart_builds() -> None:
    cmds = shell_commands()
    built = next(c[c.index("--out") + 1] for c in cmds if "index" in c and "--out" in c)
    workdir = next(rest for word, rest in instructions() if word == "WORKDIR")
    import json

    served = json.loads(next(rest for word, rest in instructions() if word == "CMD"))
    assert served[served.index("--index") + 1] == f"{workdir}/{built}"
    assert served[served.index("--host") + 1] == "0.0.0.0"  # reachable from outside the container
