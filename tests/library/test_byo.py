"""Bring-your-own models: generate()-only LLMs, embed_batch/embed_text embedders, LangChain-shaped objects."""
from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest
import torch

from atomicrag import AtomicRAG
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.library.adapters import (
    EmbedderAdapter,
    GenerateLLM,
    LangChainEmbedding,
    LangChainLLM,
    OpenAICompatEmbedding,
    OpenAICompatLLM,
    as_embedder,
    as_llm,
)
from atomicrag.library.adapters.byo import _SCHEMA_HINT
from atomicrag.llm.fake import SchemaSampler

from .conftest import DOCS, QUESTIONS, base_config


class PromptOnlyLLM:
    """The other library's protocol: generate(prompt) -> str. Replies like a chatty small model:
    schema-valid JSON wrapped in prose and a code fence (so the adapter's JSON repair is used)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if _SCHEMA_HINT in prompt:
            schema = json.loads(prompt.split(_SCHEMA_HINT)[-1])
            words = [w for w in prompt.split(_SCHEMA_HINT)[0].split() if w.isalpha()] or ["x"]
            obj = SchemaSampler(random.Random(len(prompt)), words, schema).sample(schema)
            return f"Sure! Here it is:\n```json\n{json.dumps(obj)}\n```"
        return "Thought: the context says so.\nAnswer: Warsaw"


class BatchOnlyEmbedder:
    """The other library's protocol: embed_batch / embed_text returning lists, not normalised."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(64)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        return (3.0 * self.inner.encode(texts)).tolist()

    def embed_text(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]


class TextOnlyEmbedder:
    """Only embed_text(text) -> list[float]."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(64)

    def embed_text(self, text: str) -> list[float]:
        return (0.5 * self.inner.encode([text])[0]).tolist()


def test_generate_only_llm_atomizes_and_answers() -> None:
    llm = PromptOnlyLLM()
    cfg = base_config(atomizer={"name": "llm"}, reader={"name": "precise"})
    rag = AtomicRAG(cfg, llm=llm, progress=False).index(DOCS[:5])
    assert rag.graph.num_atoms > 0 and len(rag.graph.edges["relevance"]) > 0  # triples came through
    assert rag.stats()["failed_chunks"] == 0
    res = rag.query("Where was Marie Curie born?")
    assert res.answer == "Warsaw"
    assert any(_SCHEMA_HINT in p for p in llm.prompts)
    usage = rag.stats()["llm_usage"]
    assert usage["calls"] == 2 * 5 + 1  # NER + extraction per chunk, one answer


def test_generate_llm_retries_bad_json_and_runs_concurrently() -> None:
    from atomicrag.llm.protocol import ChatRequest

    class Flaky:
        def __init__(self) -> None:
            self.n = 0

        def generate(self, prompt: str) -> str:
            self.n += 1
            return "no json here" if self.n % 2 else '{"keep_indices": [0]}'

    llm = GenerateLLM(Flaky(), concurrency=1, max_retries=1)
    schema = {"type": "object", "properties": {"keep_indices": {"type": "array"}}, "required": ["keep_indices"]}
    res = llm.chat([ChatRequest(messages=[{"role": "user", "content": "pick"}], schema=schema)])[0]
    assert res.ok and res.parsed == {"keep_indices": [0]} and res.attempts == 2
    many = GenerateLLM(PromptOnlyLLM(), concurrency=4).chat(
        [ChatRequest(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(8)])
    assert [r.text for r in many] == ["Thought: the context says so.\nAnswer: Warsaw"] * 8


@pytest.mark.parametrize("emb_cls", [BatchOnlyEmbedder, TextOnlyEmbedder])
def test_batch_only_embedder_matches_the_native_one(emb_cls: type) -> None:
    byo = AtomicRAG(base_config(), embedder=emb_cls(), progress=False).index(DOCS[:10])
    native = AtomicRAG(base_config(), embedder=FakeEmbedder(64), progress=False).index(DOCS[:10])
    assert byo.embedder.dim == 64 and byo.embedder.name.startswith("byo:")
    for a, b in zip(byo.query(QUESTIONS), native.query(QUESTIONS)):
        assert [i.atom_id for i in a.items] == [i.atom_id for i in b.items]
        assert [i.score for i in a.items] == pytest.approx([i.score for i in b.items], abs=1e-5)


def test_protocol_detection_and_errors() -> None:
    native = FakeEmbedder(8)
    assert as_embedder(native) is native  # already speaks the protocol
    assert isinstance(as_embedder(BatchOnlyEmbedder()), EmbedderAdapter)
    assert isinstance(as_llm(PromptOnlyLLM()), GenerateLLM)
    with pytest.raises(TypeError, match="not an LLM"):
        as_llm(object())
    with pytest.raises(TypeError, match="not an embedder"):
        as_embedder(object())

    class WrongDim:
        dim = 4

        def embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0] for _ in texts]

    with pytest.raises(ValueError, match="dim=4"):
        as_embedder(WrongDim()).encode(["a"])


# ----------------------------------------------------------------------------- LangChain-shaped fakes
class FakeAIMessage:
    def __init__(self, content: Any) -> None:
        self.content = content
        self.usage_metadata = {"input_tokens": 11, "output_tokens": 3}


class FakeChatModel:
    """Mimics a LangChain chat model: invoke(messages) -> message with .content."""

    model_name = "fake-chat"

    def __init__(self) -> None:
        self.inner = PromptOnlyLLM()
        self.seen: list[Any] = []

    def invoke(self, messages: list[Any]) -> FakeAIMessage:
        self.seen.append(messages)
        # (role, content) tuples without langchain-core installed, message objects with it
        texts = [m[1] if isinstance(m, tuple) else m.content for m in messages]
        reply = self.inner.generate("\n\n".join(texts))
        return FakeAIMessage([{"type": "text", "text": reply}])  # content blocks, as some providers send


class FakeLCEmbeddings:
    def __init__(self) -> None:
        self.inner = FakeEmbedder(64)
        self.query_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        return self.inner.encode([text])[0].tolist()


def test_langchain_wrappers_with_duck_typed_fakes() -> None:
    chat, emb = FakeChatModel(), FakeLCEmbeddings()
    rag = AtomicRAG(base_config(atomizer={"name": "llm"}, reader={"name": "precise"}),
                    llm=LangChainLLM(chat), embedder=LangChainEmbedding(emb), progress=False).index(DOCS[:3])
    res = rag.query("Where was Marie Curie born?")
    assert res.answer == "Warsaw" and res.items
    assert emb.query_calls > 0  # queries go through embed_query
    assert rag.stats()["llm_usage"]["prompt_tokens"] == 11 * (2 * 3 + 1)
    assert isinstance(as_llm(chat), LangChainLLM)  # invoke() objects are detected too
    with pytest.raises(TypeError, match="invoke"):
        LangChainLLM(object())


def test_langchain_retriever_needs_langchain_core() -> None:
    from atomicrag.library.adapters import as_langchain_retriever

    try:
        import langchain_core  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"pip install 'atomicrag-harness\[langchain\]'"):
            as_langchain_retriever(None)
        return
    rag = AtomicRAG(base_config(), progress=False).index(DOCS[:4])
    docs = as_langchain_retriever(rag, k=2).invoke("Where was Marie Curie born?")
    assert len(docs) == 2 and "atom_id" in docs[0].metadata


# ----------------------------------------------------------------------------- OpenAI-compatible
def test_openai_compat_embedding_and_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append({"auth": request.headers.get("authorization"), "url": str(request.url), **body})
        vecs = FakeEmbedder(16).encode(body["input"]).tolist()
        return httpx.Response(200, json={"data": [{"index": i, "embedding": v} for i, v in enumerate(vecs)]})

    monkeypatch.setenv("MY_KEY", "sk-test")
    emb = OpenAICompatEmbedding("http://emb.local", "e5", api_key_env="MY_KEY", batch_size=2,
                                transport=httpx.MockTransport(handler))
    assert emb.dim == 16
    out = emb.encode(["a b", "c", "d e f"])
    assert out.shape == (3, 16) and torch.allclose(out.norm(dim=1), torch.ones(3))
    assert seen[-1]["url"] == "http://emb.local/v1/embeddings" and seen[-1]["auth"] == "Bearer sk-test"
    assert "sk-test" not in repr(emb)
    llm = OpenAICompatLLM("http://llm.local:8000", "qwen", api_key_env="MY_KEY", response_format_style="none")
    assert llm.base_url == "http://llm.local:8000/v1" and not llm.structured_output
    assert "sk-test" not in repr(llm)


@pytest.mark.slow
def test_sentence_transformer_embedding_offline_minilm() -> None:
    from atomicrag.library.adapters import SentenceTransformerEmbedding

    emb = SentenceTransformerEmbedding("minilm", device="cpu")
    # dense retrieval isolates the embedder: the real model must put the answering atom first
    cfg = base_config(graph={"synonym_threshold": 0.8, "synonym_max_neighbors": 100}, retriever={"name": "dense"})
    rag = AtomicRAG(cfg, embedder=emb, progress=False).index(DOCS[:6])
    assert rag.embedder is emb and emb.dim == 384
    assert rag.query("Where was Marie Curie born?").items[0].atom_id == "curie#a0"
