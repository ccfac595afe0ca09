"""graph.entity_keys=ascii keys entity nodes as the released code does; unicode (ours) keeps
non-ASCII names apart and gives a name with no letter or digit no node."""
from __future__ import annotations

from atomicrag.core.config import GraphConfig
from atomicrag.core.schemas import Atom, Triple
from atomicrag.graph.build import update_graph
from atomicrag.graph.canon import ascii_key, canonical_key


def test_the_two_keys() -> None:
    assert canonical_key("Kurt  Gödel!") == "kurt gödel" and ascii_key("Kurt  Gödel!") == "kurt  g del"
    assert canonical_key("東京") == "東京" and ascii_key("東京") == "" and ascii_key(" Paris. ") == "paris"
    assert canonical_key("--") == "" == ascii_key("--")


def _graph(mode: str):
    atoms = [Atom(id="a0", text="Tokyo (東京) and Beijing (北京) are capitals.", passage_id="p0", chunk_id="c0",
                  entities=["東京", "北京", "Kurt Gödel"]),
             Atom(id="a1", text="Kurt Gödel worked in Vienna.", passage_id="p1", chunk_id="c1", entities=["Kurt Gödel", "Vienna"])]
    triples = [Triple(subject="東京", predicate="is near", object="北京", chunk_id="c0"),
               Triple(subject="Kurt Gödel", predicate="worked in", object="Vienna", chunk_id="c1")]
    return update_graph(None, atoms, triples, None, GraphConfig(entity_keys=mode)).graph


def test_released_keys_put_every_non_ascii_name_on_one_empty_node() -> None:
    ours, released = _graph("unicode"), _graph("ascii")
    assert sorted(ours.entity_keys) == ["kurt gödel", "vienna", "北京", "東京"]
    assert sorted(released.entity_keys) == ["", "kurt g del", "vienna"]  # both CJK names on one node
    # ours: 東京-北京 is a relevance edge; released: a self-pair on the empty node, no edge
    assert len(ours.edges["relevance"].src) == 2 and len(released.edges["relevance"].src) == 1
