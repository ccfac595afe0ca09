"""The library examples run as written: the README's short one and the library guide's
(docs/library.md) full one."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from atomicrag.core.compose import default_options, group_config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOC = ROOT / "docs" / "library.md"


def library_section() -> str:
    return DOC.read_text(encoding="utf-8")


def readme_library_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Use as a library")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]
# ```python blocks run, in order, in one namespace; ```python no-run blocks need servers or SDKs
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_library_section_code_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _BLOCK.findall(library_section())
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    # as written: the default models (offline MiniLM, no override), a folder of files
    for key in [k for k in os.environ if k.startswith("ATOMICRAG_") and "__" in k]:
        monkeypatch.delenv(key)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    out = capsys.readouterr().out
    lines = out.splitlines()
    ids_at = lines.index("['people/marie', 'people/pierre', 'poland']")  # the folder's files, ids without suffix
    assert "Marie Curie was born in Warsaw" in lines[ids_at + 1], out  # the best atom answers the question
    assert out.strip().splitlines()[-1] == "Warsaw"
    assert (tmp_path / "curie_index" / "manifest.json").is_file()
    rag = namespace["rag"]
    assert rag.embedder.name.startswith("st|sentence-transformers/all-MiniLM-L6-v2")  # the real default
    assert rag.config.retriever == group_config("retriever", default_options()["retriever"])  # the default retriever
    assert "<graphml" in (tmp_path / "curie.graphml").read_text()


def test_readme_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    [code] = _BLOCK.findall(readme_library_section())  # the front door has one Python example
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ATOMICRAG_") and "__" in k]:
        monkeypatch.delenv(key)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})  # noqa: S102
    assert capsys.readouterr().out.strip() == "Marie Curie was born in Warsaw in 1867."  # as the comment says
    assert (tmp_path / "curie_index" / "manifest.json").is_file()
