"""Issue 19, item 8: the reader's instructions match the context layout it is given."""
from __future__ import annotations

import re

import pytest

from atomicrag.prompts import reader


@pytest.mark.parametrize("kind", reader.KINDS)
def test_block_layout_asks_for_no_citation_numbers(kind):
    msgs = reader.build_messages(kind, "Who?", ["atom one", "atom two"], "wikipedia_title")
    text = "\n".join(m["content"] for m in msgs)
    assert "Wikipedia Title: atom one" in msgs[-1]["content"]
    assert not re.search(r"\[\d+\]", text), "a layout without numbers must not ask for or show [n] citations"
    assert "numbered" not in msgs[0]["content"] and "citing" not in msgs[0]["content"]


@pytest.mark.parametrize("kind", reader.KINDS)
def test_numbered_layout_keeps_its_citations(kind):
    msgs = reader.build_messages(kind, "Who?", ["atom one"], "numbered")
    assert "[1] atom one" in msgs[-1]["content"] and "[2]" in msgs[0]["content"]
