"""What a query returns to a library user: the engine's trace of one question, the context the
reader saw and its output, turned into a ``QueryResult`` (ranked atoms with their documents and
relative relevance, the entities and sub-questions, the answer with its inline citations)."""
from __future__ import annotations

from typing import Any

from atomicrag.library.types import QueryResult, ResultItem, relative_relevance


def query_result(trace: Any, context: list[Any], output: Any, graph: Any, max_context: int) -> QueryResult:
    """``trace``: one question's ``QueryTrace``; ``context``: the reader's documents; ``output``:
    the reader's output (None when no answer was asked for); ``graph``: the index's graph (titles,
    size); ``max_context``: how many atoms the result lists (``sieve.max_context``)."""
    cands = [a for per in trace.candidates for a in per]
    kept = None if not trace.sieve else {i for d in trace.sieve for i in d.get("kept_ids", [])}
    best: dict[str, dict[str, Any]] = {}
    for a in cands:  # one entry per atom, its best score over the queries of this question
        if (kept is None or a["atom_id"] in kept) and (a["atom_id"] not in best
                                                      or a["score"] > best[a["atom_id"]]["score"]):
            best[a["atom_id"]] = a
    ranked = sorted(best.values(), key=lambda a: -a["score"])[:max_context]  # stable
    titles = graph.meta.get("passage_titles", {})
    items = [ResultItem(text=a["text"], score=float(a["score"]), atom_id=a["atom_id"],
                        source_doc_ids=[a["passage_id"]], entity_names=list(a.get("entities", [])),
                        title=titles.get(a["passage_id"], ""),
                        relevance=relative_relevance(float(a["score"]), float(ranked[0]["score"])))
             for a in ranked]
    entities = list(dict.fromkeys(e for s in trace.seeds for e in s.get("entities", [])))
    stats = {"queries": len(trace.seeds), "entity_seeds": sum(len(s.get("entity_seeds", [])) for s in trace.seeds),
             "candidates": len(cands), "kept": len(best), "items_returned": len(items),
             "graph_nodes": graph.num_nodes}
    sources, cited, cut, looped, extractive = [], None, False, False, False
    answer = None if output is None else output.answer
    if output is not None:
        from atomicrag.engine.api import Source, cite, with_marks

        if not output.failed:
            sources = cite(output.raw, output.answer, context, seen=len(context) - output.context_dropped)
            cited = with_marks(output.answer, sources)
            if not (output.answer or "").strip():  # the model gave no answer: the best-supported sentence
                from atomicrag.engine.api import best_sentence

                best = best_sentence(trace.question, context)
                if best is not None:
                    item = context[best.item]
                    doc = str(item.get("passage_id") if isinstance(item, dict) else item.passage_id)
                    title = str((item.get("title") if isinstance(item, dict) else item.title) or "")
                    sources = [Source(n=1, doc_id=doc, title=title, context=[best.item + 1], how="extractive")]
                    answer, extractive = best.sentence, True
                    cited = with_marks(answer, sources)
        cut, looped = bool(output.truncated), bool(getattr(output, "looped", False))
    return QueryResult(query=trace.question, items=items, entities_extracted=entities,
                       answer=answer, graph_stats=stats,
                       sub_questions=list(trace.sub_questions), context=[c.to_dict() for c in context],
                       errors=list(trace.errors),  # the engine adds the reader's failure
                       documents=list(trace.retrieved_passages),
                       sources=sources, cited_answer=cited, answer_cut=cut, answer_looped=looped,
                       extractive=extractive)
