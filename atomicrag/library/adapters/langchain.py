"""LangChain interop: wrap LangChain chat models and embeddings, or expose an index as a retriever.

The wrappers are duck-typed (``invoke`` / ``embed_documents``), so they need no LangChain import
and work with any object of that shape. Messages are sent as LangChain message objects when
``langchain_core`` is installed, else as ``(role, content)`` tuples, which LangChain chat models
also accept. Only ``as_langchain_retriever`` needs ``langchain_core`` itself
(``pip install 'atomicrag-harness[langchain]'``).
"""
from __future__ import annotations

from typing import Any

from atomicrag.engine.api import ChatRequest, RawReply
from atomicrag.library.adapters.byo import EmbedderAdapter, PromptLLM, render_prompt, reply_text

_INSTALL = "LangChain integration needs langchain-core: pip install 'atomicrag-harness[langchain]'"
_ROLES = {"system": "system", "user": "human", "assistant": "ai"}


def _require_langchain() -> Any:
    try:
        import langchain_core
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return langchain_core


def _messages(request: ChatRequest) -> list[Any]:
    msgs = list(request.messages)
    if request.schema is not None:  # the schema goes in the last user turn, as for generate()
        schema_prompt = render_prompt(ChatRequest(messages=[], schema=request.schema)).strip()
        msgs = msgs + [{"role": "user", "content": schema_prompt}]
    try:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    except ImportError:
        return [(_ROLES.get(m.get("role", "user"), "human"), str(m.get("content", ""))) for m in msgs]
    cls = {"system": SystemMessage, "assistant": AIMessage}
    return [cls.get(m.get("role", "user"), HumanMessage)(content=str(m.get("content", ""))) for m in msgs]


class LangChainLLM(PromptLLM):
    """A LangChain chat model (anything with ``invoke(messages)``) as an atomicrag LLM backend."""

    def __init__(self, chat_model: Any, **kwargs: Any) -> None:
        if not callable(getattr(chat_model, "invoke", None)):
            raise TypeError(f"{type(chat_model).__name__} has no invoke(); expected a LangChain chat model")
        super().__init__(chat_model, **kwargs)

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
        reply = self.obj.invoke(_messages(request))
        usage = getattr(reply, "usage_metadata", None) or {}
        return RawReply(text=reply_text(reply), prompt_tokens=int(usage.get("input_tokens", 0) or 0),
                        completion_tokens=int(usage.get("output_tokens", 0) or 0), model=self.model)


class LangChainEmbedding(EmbedderAdapter):
    """LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``) as an atomicrag embedder."""

    def __init__(self, embeddings: Any, *, name: str | None = None, dim: int | None = None) -> None:
        if not callable(getattr(embeddings, "embed_documents", None)):
            raise TypeError(f"{type(embeddings).__name__} has no embed_documents(); expected LangChain Embeddings")
        super().__init__(embeddings, name=name, dim=dim)


def document_metadata(rag: Any, item: Any) -> dict[str, Any]:
    """A retrieved atom's LangChain metadata: ``source`` (the file's path for a file, else a
    ``source`` of the document's own metadata, else its id), ``title``, ``doc_id``, the score and
    atom id, the entities, then the document's own metadata under its own keys (never over these)."""
    doc_id = item.source_doc_ids[0] if item.source_doc_ids else ""
    doc = rag.get_document(doc_id) if doc_id in rag else None
    meta = {k: v for k, v in doc.meta.items() if k != "code_spans"} if doc is not None else {}
    source = meta.get("path") or meta.get("source") or doc_id
    ours = {"source": str(source), "title": (doc.title if doc is not None else "") or item.title,
            "doc_id": doc_id, "score": item.score, "atom_id": item.atom_id,
            "source_doc_ids": list(item.source_doc_ids), "entities": list(item.entity_names)}
    return {**{k: v for k, v in meta.items() if k not in ours}, **ours}


def as_langchain_retriever(rag: Any, *, k: int | None = None, where: Any = None) -> Any:
    """An ``AtomicRAG`` index as a LangChain ``BaseRetriever`` (documents = retrieved atoms, with
    ``source`` and ``title`` in their metadata: ``document_metadata``). ``where``: a metadata
    filter every query applies (``AtomicRAG.query``)."""
    _require_langchain()
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    class AtomicRAGRetriever(BaseRetriever):
        rag: Any
        k: int | None = None
        where: Any = None

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
            result = self.rag.query(query, answer=False, where=self.where)
            items = result.items[: self.k] if self.k else result.items
            return [LCDocument(page_content=i.text, metadata=document_metadata(self.rag, i)) for i in items]

    return AtomicRAGRetriever(rag=rag, k=k, where=where)
