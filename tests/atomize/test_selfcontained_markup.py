"""Sentence atoms lose their markup by the same rules as ingested Markdown documents."""
from __future__ import annotations

import pytest

from atomicrag.atomize.selfcontained import atom_text, self_contained
from atomicrag.data.markdown import markdown_document, strip_markup

MARKED_UP = [
    "## Team",
    "**Ada** reports to [Bob](http://x) <b>now</b>.",
    "She wrote *Notes* and `ada.py`, see ![the logo](logo.png).",
    "- Ada leads the __Apollo__ team.",
    "> It is known that {ref}`apollo` ships.",
    "### Its history ###",
]


@pytest.mark.parametrize("text", MARKED_UP)
def test_atoms_and_documents_strip_markup_the_same_way(text):
    assert atom_text(text) == strip_markup(text) == markdown_document(text, text_titles=False)[1]


def test_atom_text_also_folds_runs_of_spaces():
    assert strip_markup("Ada  reports to **Bob**.") == "Ada  reports to Bob."
    assert atom_text("  Ada  reports to **Bob**. ") == "Ada reports to Bob."


def test_self_contained_strips_before_resolving_the_pronoun():
    assert self_contained("**He** was the second son of [Lothair I](x).", ["Lothair I"], "Lothair II") == (
        "Lothair II was the second son of Lothair I.", ["Lothair II", "Lothair I"], True)
