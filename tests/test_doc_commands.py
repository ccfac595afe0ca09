"""Every ``python -m atomicrag.run`` command in the READMEs composes into a valid ``Config``.

The commands are read from the fenced code blocks of README.md, docs/*.md, experiments/README.md and
experiments/*/README.md (backslash-continued lines joined; ``make run ARGS="..."`` counts too,
as the Makefile runs ``python -m atomicrag.run $(ARGS)``). Each is composed with Hydra's compose
API the way ``atomicrag.harness.run`` composes it (conf/config.yaml, the structured schema registered),
its overrides applied; a ``-m`` sweep is expanded with Hydra's own BasicSweeper logic, glob(...)
resolved against the config groups, and its first and last job composed (every job with
ATOMICRAG_DOC_COMMANDS_ALL=1; each experiment file alone is test_experiments_compose.py's job),
so a glob that matches nothing fails too. The result must turn into
the validated dataclass (``to_dataclass``), so an unknown group option (``llm=vllm_typo``), an
unknown key or a value outside a closed set fails here. Nothing is loaded or run.

Inline fragments such as ``'+experiment/table1=glob(*,exclude=[hotpotqa_*,musique_*])'`` (the
offline variants in the per-table READMEs) are checked too: each must expand to at least one
experiment, and each exclude pattern must drop at least one.
"""
from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("hydra")
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from atomicrag.core.config import Config, register_configs, to_dataclass

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
DOCS = [ROOT / "README.md", ROOT / "experiments" / "README.md",
        *sorted((ROOT / "experiments").glob("*/README.md")), *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
RUN = re.compile(r"(?:^|\s)(?:\S*python3?)\s+-m\s+atomicrag\.run(?=\s|$)")
MAKE_RUN = re.compile(r"(?:^|\s)make\s+run(?=\s|$)")
SHELL_OPS = {"&", "&&", "||", "|", ";", ">", ">>", "<", "2>", "2>&1"}
# Hydra flags that take a value and do not change the composed job config
VALUE_FLAGS = {"-c", "--cfg", "-p", "--package", "--info"}


@dataclass(frozen=True)
class DocCommand:
    doc: str  # path relative to the repository root
    line: int  # first line of the command in that file
    text: str  # the command as written (continuations joined)
    multirun: bool
    overrides: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, logical line) of every fenced code block, backslash continuations joined."""
    out: list[tuple[int, str]] = []
    in_code = False
    pending: tuple[int, str] | None = None
    for no, raw in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(raw):
            in_code = not in_code
            pending = None
            continue
        if not in_code:
            continue
        start, text = pending if pending else (no, "")
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            pending = (start, text + stripped[:-1] + " ")
            continue
        pending = None
        out.append((start, text + stripped))
    return out


def _hydra_args(tokens: list[str]) -> tuple[bool, list[str]]:
    """Split the arguments after ``atomicrag.harness.run`` into (multirun?, overrides)."""
    multirun, overrides = False, []
    it = iter(tokens)
    for tok in it:
        if tok in SHELL_OPS:
            break
        if tok in ("-m", "--multirun"):
            multirun = True
        elif tok in VALUE_FLAGS:
            next(it, None)
        elif tok.startswith("-"):
            raise ValueError(f"unexpected flag {tok!r}; teach tests/test_doc_commands.py about it")
        else:
            overrides.append(tok)
    return multirun, overrides


def parse_command(line: str) -> tuple[bool, list[str]] | None:
    """The Hydra arguments of a shell line that runs the harness, or None if it does not."""
    if m := RUN.search(line):
        return _hydra_args(shlex.split(line[m.end():], comments=True))
    if m := MAKE_RUN.search(line):
        tokens = shlex.split(line[m.end():], comments=True)
        args: list[str] = []
        for tok in tokens:
            if tok in SHELL_OPS:
                break
            if tok.startswith("ARGS="):
                args = shlex.split(tok[len("ARGS="):])  # make pastes $(ARGS) unquoted into the shell
        return _hydra_args(args)
    return None


SPAN = re.compile(r"`([^`]+)`")


def _inline_spans(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every inline code span outside the fenced blocks."""
    in_code, out = False, []
    for no, raw in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(raw):
            in_code = not in_code
        elif not in_code:
            out += [(no, m.group(1)) for m in SPAN.finditer(raw)]
    return out


def doc_commands() -> list[DocCommand]:
    """Harness commands of the code blocks, then those written inline (`make run ARGS="..."`)."""
    cmds = []
    for path in DOCS:
        doc = str(path.relative_to(ROOT))
        for no, line in _code_lines(path) + _inline_spans(path):
            parsed = parse_command(line)
            if parsed is not None and not any(c.doc == doc and c.line == no for c in cmds):
                cmds.append(DocCommand(doc, no, line.strip(), parsed[0], tuple(parsed[1])))
    return cmds


COMMANDS = doc_commands()

# '+experiment/<folder>=glob(...)' or '+experiment=table/name[,table/name]' in inline code spans
# (experiments/README.md's `+experiment=glob(table2/*)` is its example of what matches nothing)
INLINE = re.compile(r"`'?(\+experiment/\w+=glob\([^`']*\)|\+experiment=\w+/[\w/,]+)'?`")


def inline_fragments() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        for no, span in _inline_spans(path):
            for m in INLINE.finditer(f"`{span}`"):
                out.append((f"{path.relative_to(ROOT)}:{no}", m.group(1)))
    return out


FRAGMENTS = inline_fragments()
GROUPS = {p.name for p in CONF.iterdir() if p.is_dir()} - {"experiment"}
GROUP_CHOICE = re.compile(r"^(\w+)=([\w.-]+)$")
BARE_LLM = re.compile(r"^(?:vllm|openai)_\w+$")  # an llm option named alone


def group_choices() -> list[tuple[str, str]]:
    """Every `group=option` named anywhere in the docs (code blocks and inline spans)."""
    out = []
    for path in DOCS:
        for no, text in _code_lines(path) + _inline_spans(path):
            try:
                tokens = shlex.split(text, comments=True)
            except ValueError:  # prose with an odd quote
                tokens = text.split()
            for tok in tokens:
                for t in shlex.split(tok[len("ARGS="):]) if tok.startswith("ARGS=") else [tok]:
                    m = GROUP_CHOICE.match(t)
                    if m and m.group(1) in GROUPS:
                        out.append((f"{path.relative_to(ROOT)}:{no}", t))
            if BARE_LLM.match(text):  # "(`vllm_qwen7b`, `vllm_llama8b`)"
                out.append((f"{path.relative_to(ROOT)}:{no}", f"llm={text}"))
    return sorted(set(out))


CHOICES = group_choices()


@pytest.fixture(scope="module")
def hydra_ctx():
    """Hydra initialised on conf/ as atomicrag.harness.run does; yields its config loader."""
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield GlobalHydra.instance().config_loader()


def expand(loader, overrides: list[str], multirun: bool) -> list[list[str]]:
    """The override list of every job Hydra would launch (one job without ``-m``)."""
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(list(overrides))
    sweeps = [o.input_line for o in parsed if o.is_sweep_override()]
    if not multirun:
        assert not sweeps, f"sweep override(s) {sweeps} need -m"
        return [list(overrides)]
    [batches] = BasicSweeper.split_arguments(parsed, max_batch_size=None)
    return batches


# unknown group option / key, bad type, value outside a closed set (__post_init__)
COMPOSE_ERRORS = (HydraException, OmegaConfBaseException, ValueError, TypeError)


@functools.cache
def _compose_cached(overrides: tuple[str, ...]) -> Config:
    return to_dataclass(compose("config", overrides=list(overrides)))


def compose_job(overrides: list[str]) -> Config:
    return _compose_cached(tuple(overrides))


def jobs_to_compose(jobs: list[list[str]]) -> list[list[str]]:
    """The first and last job of a sweep, or all with ATOMICRAG_DOC_COMMANDS_ALL=1.

    One compose costs ~0.1-0.3 s; every experiment file alone is composed by
    test_experiments_compose.py, so the ends of a sweep check what a command adds to it
    (its overrides on top of the experiment files) and that its glob matches.
    """
    if os.environ.get("ATOMICRAG_DOC_COMMANDS_ALL") == "1" or len(jobs) <= 2:
        return jobs
    return [jobs[0], jobs[-1]]


def test_commands_are_found() -> None:
    docs = {c.doc for c in COMMANDS}
    assert "README.md" in docs and "experiments/README.md" in docs
    assert len(COMMANDS) >= 15
    # the backslash-continued GPU commands are read whole
    gpu = [c for c in COMMANDS if "llm=vllm_qwen14b" in c.overrides]
    assert any("dataset=medical_dev" in c.overrides for c in gpu)
    assert any(c.multirun and "llm.base_url=http://127.0.0.1:8000/v1" in c.overrides for c in gpu)
    # make run ARGS="..." counts
    assert any("dataset.limit=5" in c.overrides for c in COMMANDS)


def test_parse_command() -> None:
    assert parse_command("vllm serve Qwen/Qwen2.5-14B-Instruct --port 8000 &") is None
    assert parse_command("python -m atomicrag.run") == (False, [])
    assert parse_command(
        "FOO=1 .venv/bin/python -m atomicrag.run -m '+experiment/t=glob(*)' a.b=1  # note"
    ) == (True, ["+experiment/t=glob(*)", "a.b=1"])
    assert parse_command("""make run ARGS="-m '+experiment/table2_smoke=glob(*)' x=5" """) == (
        True, ["+experiment/table2_smoke=glob(*)", "x=5"])


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
def test_doc_command_composes(hydra_ctx, cmd: DocCommand) -> None:
    jobs = expand(hydra_ctx, list(cmd.overrides), cmd.multirun)
    assert jobs, f"{cmd.id}: `{cmd.text}` launches no job (a glob that matches nothing?)"
    for job in jobs_to_compose(jobs):
        try:
            cfg = compose_job(job)
        except COMPOSE_ERRORS as exc:  # name the doc line, the job and Hydra's reason
            pytest.fail(f"{cmd.id}: `{cmd.text}`\n  job {job} does not compose: {exc}")
        assert isinstance(cfg, Config)
        # every plain key=value override of the command reaches the validated config
        for ov in OverridesParser.create().parse_overrides(job):
            key = ov.key_or_group
            if ov.package is None and ov.type.name == "CHANGE" and "." in key and not key.startswith("hydra."):
                got = functools.reduce(getattr, key.split("."), cfg)
                assert got == ov.value(), (cmd.id, ov.input_line, got)


@pytest.mark.parametrize("where,fragment", FRAGMENTS, ids=[f"{w}:{f}" for w, f in FRAGMENTS])
def test_inline_experiment_fragment(hydra_ctx, where: str, fragment: str) -> None:
    [ov] = OverridesParser.create(config_loader=hydra_ctx).parse_overrides([fragment])
    value = ov.value()
    if isinstance(value, Glob):
        options = hydra_ctx.get_group_options(ov.key_or_group)
        assert options, f"{where}: `{fragment}`: no config group {ov.key_or_group!r}"
        for pattern in value.exclude:
            assert any(fnmatch.fnmatch(o, pattern) for o in options), (
                f"{where}: `{fragment}`: exclude pattern {pattern!r} matches nothing in {ov.key_or_group}")
    jobs = expand(hydra_ctx, [fragment], multirun=True)
    assert jobs, f"{where}: `{fragment}` expands to no experiment"
    try:
        compose_job(jobs[0])  # each file of the sweep alone: test_experiments_compose.py
    except COMPOSE_ERRORS as exc:
        pytest.fail(f"{where}: `{fragment}` (first job {jobs[0]}) does not compose: {exc}")


def test_every_group_choice_named_in_the_docs_exists() -> None:
    """`llm=vllm_qwen7b`, `dataset=2wiki_dev_authors_chunks`, ... in prose too: each is a conf file."""
    assert len(CHOICES) >= 10
    missing = [f"{where}: {choice}" for where, choice in CHOICES
               if not (CONF / choice.split("=")[0] / f"{choice.split('=')[1]}.yaml").is_file()]
    assert not missing, "docs name config group options that do not exist:\n" + "\n".join(missing)
