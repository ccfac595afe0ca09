"""The atomize stage's estimate for the run plan (``harness/plan.py``), made without building
anything: the atom texts an index will hold, and the requests the ``llm`` atomizer sends."""
from __future__ import annotations

import re
from typing import Any

from atomicrag.llm.budget import sent_cap
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.sampling import request_seed
from atomicrag.prompts import extraction as extraction_prompt
from atomicrag.prompts import ner as ner_prompt

# sentence boundaries of the corpus text (the sentence atomizer's atoms, estimated)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def atom_texts(cfg: Any, passages: list[Any]) -> list[str]:
    """The atom texts the index will hold, as near as can be told without building it."""
    if cfg.atomizer.name == "chunk" or getattr(cfg.atomizer, "atom_unit", "atoms") == "chunks":
        return [p.text for p in passages]
    out = []
    for p in passages:
        for sent in _SENTENCE.split(p.text.strip()):
            if sent:
                out.append(f"{p.title}: {sent}" if cfg.atomizer.title_context and p.title else sent)
    return out


def ner_schema(fidelity: Any) -> dict[str, Any] | None:
    """The JSON schema NER requests carry (none when the released replies are read as released)."""
    return None if fidelity.extraction_replies == "released" else ner_prompt.SCHEMA


def index_requests(cfg: Any, passages: list[Any], released: Any) -> dict[str, list[ChatRequest]]:
    """The requests the ``llm`` atomizer sends, per passage and as the run sends them (so a cache
    probe finds their replies): ``{"ner": [...], "extraction": [...]}``, the extraction prompts
    without their entity lists; ``{}`` for an atomizer that sends none."""
    if cfg.atomizer.name != "llm":
        return {}
    seed = request_seed(cfg.llm.seed, cfg.fidelity)
    ner = [ChatRequest(ner_prompt.build_messages(p.text, p.title, released), ner_schema(cfg.fidelity),
                       max_tokens=sent_cap(cfg.fidelity, cfg.atomizer.ner_max_tokens), seed=seed) for p in passages]
    extraction = [ChatRequest(extraction_prompt.build_messages(p.text, [], p.title), None,
                              max_tokens=sent_cap(cfg.fidelity, cfg.atomizer.extraction_max_tokens), seed=seed)
                  for p in passages]
    return {"ner": ner, "extraction": extraction}
