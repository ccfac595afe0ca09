"""Token windows: sizes, overlap, ids, and spans that point back into the passage text."""
from __future__ import annotations

import itertools

import pytest

from atomicrag.core.config import DatasetConfig
from atomicrag.core.schemas import Passage
from atomicrag.data import Chunker, chunk_passages
from atomicrag.data.token_windows import regex_spans
from tests.marks import MINILM, needs

LONG = " ".join(f"Word{i}, said the {i % 7}th speaker." for i in range(200))  # ~1,400 regex tokens


def _check_windows(p: Passage, chunks: list, size: int, overlap: int, spans_of) -> None:
    tokens = spans_of(p.text)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks] == [f"{p.id}#c{i}" for i in range(len(chunks))]
    windows = []
    for c in chunks:
        assert c.passage_id == p.id and c.title == p.title
        assert c.text == p.text[c.start_char: c.end_char]  # the span reconstructs the chunk
        inside = [i for i, (s, e) in enumerate(tokens) if s >= c.start_char and e <= c.end_char]
        assert len(inside) <= size
        windows.append(inside)
    for a, b in itertools.pairwise(windows):
        assert len(set(a) & set(b)) == overlap  # consecutive windows share exactly `overlap` tokens
    # every token lies in some window, and the windows start/end at the text's first/last token
    covered = set().union(*map(set, windows))
    assert covered == set(range(len(tokens)))
    assert chunks[0].start_char == tokens[0][0] and chunks[-1].end_char == tokens[-1][1]


def test_regex_windows_cover_text_with_overlap() -> None:
    p = Passage(id="p1", title="Speakers", text=LONG)
    chunker = Chunker(size=100, overlap=20)
    chunks = chunker.chunk(p)
    assert len(chunks) > 10
    _check_windows(p, chunks, 100, 20, regex_spans)
    # stitching the non-overlapping parts back together gives the text (from the first token on)
    rebuilt = chunks[0].text
    for prev, c in itertools.pairwise(chunks):
        rebuilt += p.text[prev.end_char: c.end_char]
    assert rebuilt == p.text[chunks[0].start_char: chunks[-1].end_char]


def test_short_passage_is_one_chunk_with_the_passage_id() -> None:
    p = Passage(id="2wiki-00001", title="T", text="  A short passage. ")
    (c,) = Chunker().chunk(p)
    assert (c.id, c.passage_id, c.text, c.start_char, c.end_char, c.title) == (
        "2wiki-00001", "2wiki-00001", p.text, 0, len(p.text), "T")


def test_exactly_one_window_and_one_token_more() -> None:
    text = " ".join(f"w{i}" for i in range(256))
    assert len(Chunker().chunk(Passage(id="a", text=text))) == 1
    two = Chunker().chunk(Passage(id="b", text=text + " extra"))
    assert len(two) == 2 and two[1].text.endswith("extra")


def test_config_defaults_and_validation() -> None:
    chunks = chunk_passages([Passage(id="x", text=LONG)], DatasetConfig(chunk_tokens=64, chunk_overlap=8))
    _check_windows(Passage(id="x", text=LONG), chunks, 64, 8, regex_spans)
    assert Chunker().name == "window:regex:256/32"
    with pytest.raises(ValueError):
        Chunker(size=10, overlap=10)


@needs(MINILM, "transformers")
def test_hf_tokenizer_offsets() -> None:
    from transformers import AutoTokenizer

    from atomicrag.core.offline_models import offline_minilm_path
    from atomicrag.data.token_windows import hf_span_fn

    p = Passage(id="p", text=LONG)
    chunker = Chunker(size=128, overlap=16, tokenizer="minilm")
    spans = hf_span_fn("minilm")
    _check_windows(p, chunker.chunk(p), 128, 16, spans)
    # long texts are tokenized in pieces; the spans equal one whole-text call
    long_text = LONG * 8
    tok = AutoTokenizer.from_pretrained(offline_minilm_path())
    whole = tok(long_text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    assert spans(long_text) == [tuple(o) for o in whole["offset_mapping"] if o[1] > o[0]]


def test_long_text_pieces_break_before_spaces() -> None:
    from atomicrag.data.token_windows import _pieces

    text = ("word " * 9000) + "x" * 30_000
    pieces = _pieces(text, size=1000)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))
    assert all(text[s] == " " for s, _ in pieces[1:] if s < 45_000)  # the unbroken run is cut anyway
