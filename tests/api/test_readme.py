"""The README's "Use as a library" section runs as written."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "README.md"


def library_section() -> str:
    text = DOC.read_text(encoding="utf-8")
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
    # The example names the offline MiniLM; the fake embedder keeps this test fast. The swap goes
    # through the documented environment override, so the code itself runs unchanged.
    monkeypatch.setenv("ATOMICRAG_EMBEDDER__NAME", "fake")
    monkeypatch.setenv("ATOMICRAG_LLM__CACHE", "false")
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    out = capsys.readouterr().out
    assert "Marie Curie was born in Warsaw" in out
    assert out.strip().splitlines()[-1] == "Warsaw"
    assert (tmp_path / "curie_index" / "manifest.json").is_file()
