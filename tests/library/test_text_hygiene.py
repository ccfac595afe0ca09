"""Control characters never reach the index, and every export parses with its format's reader."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.data.ingest import read_path
from tests.library.conftest import base_config


def test_control_characters_are_removed_and_a_text_of_only_them_is_empty(tmp_path: Path) -> None:
    (tmp_path / "nul.txt").write_bytes(b"\x00\x00\x01\x1b")
    (tmp_path / "ok.txt").write_text("Warsaw\x00 is the capital\x1b[31m of Poland.\tYes.\n")
    docs, skipped = read_path(tmp_path)
    assert [d["id"] for d in docs] == ["ok"]
    assert [Path(s.path).name for s in skipped] == ["nul.txt"]  # skipped and listed like an empty file
    assert docs[0]["text"] == "Warsaw is the capital[31m of Poland.\tYes.\n"
    with pytest.raises(ValueError, match="empty text"):
        AtomicRAG(base_config(), progress=False).index(["\x00\x00"])


def test_every_export_parses_even_with_control_characters_in_the_graph(tmp_path: Path) -> None:
    rag = AtomicRAG(base_config(), progress=False).index(
        [{"doc_id": "a", "title": "T\x07itle", "text": "Marie Curie\x00 was born in Warsaw. Warsaw is in Poland."}])
    # an index built before ingest cleaned text: put a control character back into the graph
    rag.graph.atoms[0].text += "\x0b"
    rag.export(tmp_path / "g.graphml")
    rag.export(tmp_path / "g.json")
    root = ET.parse(tmp_path / "g.graphml").getroot()  # raises on an unreadable file
    assert root.tag.endswith("graphml") and len(root.iter().__next__()) > 0
    data = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert data["atoms"] and all("\x00" not in a["text"] for a in data["atoms"])
