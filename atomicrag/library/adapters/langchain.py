"""LangChain interop: wrap LangChain chat models and embeddings, or expose an index as a retriever.

The wrappers are duck-typed (``invoke`` / ``embed_documents``), so they need no LangChain import
and work with any object of that shape. Messages are sent as LangChain message objects when
``langchain_core`` is installed, else as ``(role, content)`` tuples, which LangChain chat models
also accept. Only ``as_langchain_retriever`` needs ``langchain_core`` itself
(``pip install 'atomicrag-harness[langchain]'``).
"""
from __future__ import annotations

from typing import Any

from atomicrag.library.adapters.byo import EmbedderAdapter, PromptLLM, render_prompt, reply_text
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.retry import RawReply

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


def as_langchain_retriever(rag: Any, *, k: int | None = None) -> Any:
    """An ``AtomicRAG`` index as a LangChain ``BaseRetriever`` (documents = retrieved atoms)."""
    _require_langchain()
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    class AtomicRAGRetriever(BaseRetriever):
        rag: Any
        k: int | None = None

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
            result = self.rag.query(query, answer=False)
            items = result.items[: self.k] if self.k else result.items
            return [LCDocument(page_content=i.text, metadata={"score": i.score, "atom_id": i.atom_id,
                                                               "source_doc_ids": i.source_doc_ids,
                                                               "entities": i.entity_names}) for i in items]

    return AtomicRAGRetriever(rag=rag, k=k)
