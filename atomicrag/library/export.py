"""Graph exports other tools open: GraphML (Gephi, Cytoscape, yEd, networkx) and plain JSON.

``export_graph(docs, graph, path)`` picks the format from the suffix: ``.graphml`` writes the
Atom-Entity Graph through networkx, ``.json`` (or no path) the plain data of
``library.io.export_data``. Exports are for looking at and for other tools; ``save``/``load`` are
the storage format.

GraphML layout: node ids ``e<i>`` (entities) and ``a<j>`` (atoms) in the graph's node order;
every node has ``kind`` (entity | atom), ``label`` and ``text``; atoms also ``atom_id``,
``doc_id``, ``chunk_id``, ``title`` and ``entities`` (joined with ``"; "``). Edges carry
``type`` (containment | relevance | synonym) and ``weight``; a pair linked by two types has two
edges (a multigraph), so no type is lost.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from atomicrag.library.io import export_data

FORMATS = (".graphml", ".json")
# what XML 1.0 cannot hold (its Char production), and the C1 controls data.validate.clean_text removes
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` without the characters an XML 1.0 document cannot contain."""
    return _NOT_XML.sub("", text)


def to_networkx(graph: Any, titles: dict[str, str] | None = None) -> Any:
    """The graph as a ``networkx.MultiGraph`` with text on nodes and the type on edges."""
    import networkx as nx

    titles = titles if titles is not None else dict(graph.meta.get("passage_titles", {}))
    g = nx.MultiGraph(name="atomicrag Atom-Entity Graph", embedder=graph.embedder_name or "")
    num_e = graph.num_entities
    for i, (key, text) in enumerate(zip(graph.entity_keys, graph.entity_texts)):
        g.add_node(f"e{i}", kind="entity", label=text, text=text, key=key)
    for j, atom in enumerate(graph.atoms):
        g.add_node(f"a{j}", kind="atom", label=atom.text, text=atom.text, atom_id=atom.id,
                   doc_id=atom.passage_id, chunk_id=atom.chunk_id, title=titles.get(atom.passage_id, ""),
                   entities="; ".join(atom.entities))

    def node(n: int) -> str:
        return f"e{n}" if n < num_e else f"a{n - num_e}"

    for kind, edges in graph.edges.items():
        for s, d, w in zip(edges.src.tolist(), edges.dst.tolist(), edges.weight.tolist()):
            g.add_edge(node(s), node(d), key=kind, type=kind, weight=float(w))
    return g


def _atomic_write(path: Path, write: Any) -> None:
    """``write(tmp_path)`` beside ``path``, then rename: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        # mkstemp creates 0600; an export is for other tools and people: the umask's usual mode
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_graph(docs: dict[str, Any], graph: Any, path: str | Path | None = None, *,
                 embeddings: bool = False) -> dict[str, Any]:
    """Write ``path`` (.graphml or .json) and return the plain data (as ``export_data``)."""
    data = export_data(docs, graph, None, embeddings=embeddings)
    if path is None:
        return data
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"export format {suffix or '(no suffix)'!r} is not one of {', '.join(FORMATS)}")
    if suffix == ".json":
        import json

        _atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8"))
        return data
    if graph is None:
        raise ValueError("the index is empty: nothing to export as GraphML")
    if embeddings:
        raise ValueError("GraphML holds no vectors; export embeddings as .json")
    import networkx as nx

    g = to_networkx(graph)
    # XML 1.0 cannot hold control characters, U+FFFE/U+FFFF or surrogates at all (not even
    # escaped): an index built before ingest removed them may still carry some, and a GraphML
    # file that no reader parses is no export
    for attrs in [*(a for _, a in g.nodes(data=True)), *(a for *_, a in g.edges(data=True)), g.graph]:
        for key, value in attrs.items():
            if isinstance(value, str):
                attrs[key] = xml_text(value)
    _atomic_write(path, lambda tmp: nx.write_graphml(g, str(tmp), encoding="utf-8"))
    return data
