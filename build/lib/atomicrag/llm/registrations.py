"""The LLM backends this package provides, by ``llm.name`` (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import LLMS

for _name in ("fake", "openai", "llamacpp", "vllm", "transformers"):
    LLMS.add(_name, f"atomicrag.llm.backends:{_name}")
