"""Configuration sections read at query time, and the shared prompt source (re-exported by ``config``).

``FidelityConfig`` (where the LLM stages' prompts come from and how replies are read), ``RetrieverConfig``, ``DecomposeConfig``,
``SieveConfig`` and ``ReaderConfig``: the groups a retrieval/answering sweep varies. Same rules as
``config.py``: validation in ``__post_init__`` with the ``core.checks`` helpers, allowed stage
names are the registry keys.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from atomicrag.core import checks, registry


@dataclass
class FidelityConfig:
    """Where every LLM stage's prompts come from and how their replies are read: the small set of
    paper-vs-released-code settings (docs/fidelity.md) that all stages share. A released
    behaviour of one stage lives in that stage's own section (``graph.entity_keys``,
    ``embedder.embed_pooling``, ``judge.acc_weight``, ...; ``core.config_moves.MOVED_FIELDS``), so this
    object is what a stage takes only to find its prompts, reply reading, request seeds and budgets."""

    preset: str = checks.mode(Literal["paper", "reference_code", "custom"], "paper")  # label only: paper | reference_code | custom
    # prompts: own (this project's wording) | released (read from a checkout of the released code at
    # run time, never copied here: atomicrag/prompts/released.py). released_code: that checkout's
    # path (else the ATOMICRAG_RELEASED_CODE environment variable).
    prompts: str = checks.mode(Literal["own", "released"], "own")
    released_code: str | None = None
    # NER, extraction and query NER replies: structured (JSON schemas / guided decoding; an unreadable
    # reply re-asked warmer with a new seed, a chunk that still fails counted as failed) | released
    # (free text read the released way, prompts/released_replies.py: an unreadable reply is an empty
    # result, counted as a fallback; no re-asking; fragment entity lists aligned by position)
    extraction_replies: str = checks.mode(Literal["structured", "released"], "structured")
    # completion budgets: own (reader.max_tokens, decompose.max_tokens, atomizer.ner_max_tokens /
    # extraction_max_tokens, retriever.query_ner_max_tokens) | released (no cap sent, as the released
    # run script's max_new_tokens=None; the reader still keeps reader.max_tokens free in the window
    # when it trims the context)
    budgets: str = checks.mode(Literal["own", "released"], "own")
    # the seed of every LLM request: sent (llm.seed, judge.llm.seed; a seeded sampled call is
    # reproducible and cacheable) | none (released: no seed in any request body)
    request_seed: str = checks.mode(Literal["sent", "none"], "sent")
    # an empty free-text reply: reask (a failure; re-asked warmer with another seed, then counted as
    # failed) | accepted (released: "" is the reply, and the stage's released reading counts it)
    empty_replies: str = checks.mode(Literal["reask", "accepted"], "reask")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.text(self, "released_code")


@dataclass
class RetrieverConfig:
    name: str = "ppr"  # ppr | rwr | power | katz | labelprop | bfs | qiter | dense (w/o ERGR) | dense_passage
    top_k: int = 25  # atoms kept per query
    passage_top_k: int = 5  # dense_passage (vanilla RAG): passages given to the reader
    reranker: str | None = None  # dense_passage: a cross-encoder id/path (e.g. BAAI/bge-reranker-large)
    rerank_candidates: int = 25  # dense_passage: passages re-scored by the reranker
    damping: float = 0.3  # rho; its meaning is damping_semantics (below)
    max_iter: int = 20  # propagation iterations (ppr/katz/labelprop)
    tol: float = 0.0  # stop early when the L1 change of every column is below this (0 = fixed iterations)
    # ppr: topk = stop a query once its top-k atom set is certified exact (residual bound), else at
    # the accuracy of max_iter power steps; accuracy = only the latter; fixed = exactly max_iter power steps
    ppr_stop: str = checks.mode(Literal["topk", "accuracy", "fixed"], "topk")
    device: str = "auto"  # auto | cpu | cuda
    query_batch: int = 1024  # queries propagated together
    # seeding
    # spacy | llm (paper: LLM NER on the query) | spacy_match (spaCy NER plus the graph's entity
    # names found in the query by exact token match: robust to oddly cased questions)
    # spacy_idf: spacy_match without the graph names in more than query_entity_max_df of the atoms
    # spacy_cased: spacy_idf, graph names only where the question writes them with a capital or digit
    query_entities: str = checks.mode(Literal["spacy", "llm", "spacy_match", "spacy_idf", "spacy_cased"], "spacy")
    query_ner_max_tokens: int = 256  # query_entities=llm: completion budget of the query NER reply
    # query_entities=llm: seconds a query NER request may wait for its reply once it holds its
    # concurrency slot (its resends included); past it the query has no entities (atom seeds only),
    # counted in the question's errors. 0 / None: no limit. The released query NER's is 60
    # (conf/fidelity/reference_code.yaml); honoured by the OpenAI-compatible client only
    query_ner_timeout_s: float | None = None
    query_entity_max_df: float = 0.002  # spacy_idf: max fraction of atoms a question-matched graph name may occur in
    entity_top_k: int = 20
    entity_sim_threshold: float = 0.3
    atom_seed_weight: float = 0.1  # alpha
    atom_seed_top_k: int = 25  # atoms seeded per query when atom_seeding=topk
    # hybrid offline retrieval (retrieve/hybrid.py); the defaults leave the paper's PPR unchanged
    lexical_weight: float = 0.0  # BM25 share (0..1) beside the cosine in entity linking and atom seeds
    passage_nodes: bool = False  # passage nodes joined to their atoms inside the PPR (HippoRAG 2)
    passage_edge_weight: float = 1.0  # weight of each passage-atom edge
    passage_seed_weight: float = 0.0  # passage node seed = this x dense passage score (needs passage_nodes)
    passage_seed_top_k: int = 25  # passages seeded per query
    passage_ranking: str = checks.mode(Literal["best_atom", "atom_sum", "node", "fusion", "bridge"], "best_atom")  # best_atom (top-k atoms) | atom_sum | node | fusion | bridge (passage_nodes.py)
    bridge_weight: float = 1.0  # bridge: weight of the best other-passage atom naming a passage's subject
    fusion_dense_weight: float = 0.0  # fusion: weight of the dense passage score beside the graph score
    fusion_lexical_weight: float = 0.0  # fusion: weight of the passage BM25 score (max-normalised)
    # rwr
    num_walks: int = 1000
    walk_length: int = 10
    rng_seed: int = 0
    # katz
    katz_beta: float = 0.1
    # bfs
    bfs_decay: float = 0.5
    bfs_max_hops: int = 3
    # qiter
    traversal_depth: int = 2
    beam_size: int = 10
    anchor_top_k: int = 10
    query_update_weight: float = 0.3
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones)
    # what the damping value means
    damping_semantics: str = checks.mode(Literal["restart", "continue"], "restart")  # restart (paper Eq. 7: rho is restart prob) | continue (igraph damping)
    dangling: str = checks.mode(Literal["seed", "uniform"], "seed")  # where dangling-node mass goes: seed (released code) | uniform
    # how far PPR is solved: budget (the accuracy of retriever.max_iter power steps: L1 error
    # c^(max_iter+1), 0.11 at igraph damping 0.9) | exact (released: PRPACK's exact solve; here a
    # residual bound of 1e-10 in float64, retriever.max_iter only a safety cap raised to 1000)
    ppr_solve: str = checks.mode(Literal["budget", "exact"], "budget")
    # atom seeds
    atom_seeding: str = checks.mode(Literal["topk", "all_minmax"], "topk")  # topk (paper: bias toward entities) | all_minmax (code: every atom, min-max)
    # vector index
    vector_index: str = checks.mode(Literal["exact", "faiss"], "exact")  # exact (torch matmul) | faiss (HNSW approximate top-k of atom seeds / dense atoms)
    entity_link_fallback: str = checks.mode(Literal["none", "best"], "none")  # none | best (released: the best entity when none passes the threshold)

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.RETRIEVERS.names())
        checks.positive(self, "query_ner_max_tokens")
        if self.query_ner_timeout_s is not None and self.query_ner_timeout_s < 0:
            raise ValueError("retriever.query_ner_timeout_s must be >= 0 (0 or null: no limit), "
                             f"got {self.query_ner_timeout_s}")
        checks.unit(self, "damping", "entity_sim_threshold", "bfs_decay", "lexical_weight", "query_entity_max_df")
        checks.positive(
            self, "top_k", "passage_top_k", "rerank_candidates", "max_iter", "query_batch",
            "entity_top_k", "num_walks", "walk_length", "passage_edge_weight", "passage_seed_top_k",
        )
        checks.in_range(self, 0.0, None, "passage_seed_weight", "fusion_dense_weight", "fusion_lexical_weight", "bridge_weight")
        if self.passage_ranking == "node" and not self.passage_nodes:
            raise ValueError("RetrieverConfig.passage_ranking='node' needs passage_nodes=true")
        checks.in_range(self, 0.0, None, "atom_seed_weight", "tol")
        checks.positive(self, "atom_seed_top_k", "beam_size", "anchor_top_k", "traversal_depth")
        checks.in_range(self, 0, None, "bfs_max_hops", "rng_seed")
        checks.in_range(self, 0.0, 1.0, "katz_beta", "query_update_weight")
        checks.device(self, "device")
        checks.text(self, "reranker")


@dataclass
class DecomposeConfig:
    name: str = "none"  # llm (paper's AQD) | none (w/o AQD)
    complexity_threshold: float = 6.5
    max_sub_questions: int = 3
    # completion budget of the decomposition reply; None: llm.max_tokens. The paper preset sets the
    # released code's budget (its max_new_tokens, 2048, for every call)
    max_tokens: int | None = None
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones)
    # decomposition trigger
    decompose_trigger: str = checks.mode(Literal["score", "score_and_flag"], "score")  # score | score_and_flag (code)
    # decomposition reply: own (JSON schema; empty/repeated sub-questions dropped, then capped) |
    # released (free text with the released JSON fallbacks; capped first, empty/repeated kept)
    decompose_parse: str = checks.mode(Literal["own", "released"], "own")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.DECOMPOSERS.names())
        checks.positive(self, "max_sub_questions", "max_tokens")
        checks.in_range(self, 0.0, 10.0, "complexity_threshold")  # the prompt's complexity score is 0-10


@dataclass
class SieveConfig:
    name: str = "none"  # llm (paper's AS) | none (w/o AS)
    max_context: int = 25  # atoms in the merged context
    max_tokens: int = 512  # completion budget of the sieve reply (a list of kept atom ids)
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones)
    # sieve target
    sieve_target: str = checks.mode(Literal["original_question", "sub_query"], "original_question")  # original_question | sub_query
    # the sieve: own (this project's prompt, JSON schema, ids in candidate order, sieve.max_tokens) |
    # released (the released filter's prompt read from the checkout, its free-text reply parsed the
    # released way, ids in the model's order, the released budget; keep-all fallbacks counted)
    sieve_prompt: str = checks.mode(Literal["own", "released"], "own")
    # seconds a sieve request may wait for its reply once it holds its concurrency slot (its resends
    # included); past it every candidate is kept in candidate order and the prompt is counted as
    # failed and timed out (sieve_summary: timed_out_prompts). 0 / None: no limit. The released
    # filter's is 60 (conf/fidelity/reference_code.yaml). Honoured by the OpenAI-compatible client
    # only: an in-process backend cannot cut a generation short (a warning says so)
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.SIEVES.names())
        checks.positive(self, "max_context", "max_tokens")
        if self.timeout_s is not None and self.timeout_s < 0:
            raise ValueError(f"sieve.timeout_s must be >= 0 (0 or null: no limit), got {self.timeout_s}")


@dataclass
class ReaderConfig:
    name: str = "dataset"  # dataset (the dataset's own choice) | precise | abstract | none (retrieval only)
    max_tokens: int = 512
    # What the reader reads: documents = ranked documents filled to context_tokens
    # (retrieve/reader_context.py); atoms = the paper's atom list (merge below, sieve.max_context);
    # auto = atoms under fidelity.preset=reference_code, else documents.
    context: str = checks.mode(Literal["auto", "documents", "atoms"], "auto")
    context_tokens: int = 800  # documents: budget in regex tokens (\w+ | punctuation) of context text
    whole_doc_tokens: int = 200  # documents: a document this short goes in whole, a longer one as snippets
    neighbour_sentences: int = 1  # documents: sentences kept on each side of a ranked atom of a long document
    atoms_first: bool = True  # documents: a long document's ranked atoms first, their neighbours after all of them
    max_documents: int = 0  # documents: read at most this many ranked documents (0: as many as the budget holds)
    # documents: how many ranked documents the reader reads is the LLM option's setting
    # (llm.reader_documents); for an LLM config that does not say, one of at most small_reader_b
    # billion parameters (llm.params_b, stated: never guessed from a model's name) reads at most
    # small_reader_documents (0: no limit); max_documents overrides both. A 0.5B reader given
    # every document that fits the budget loses the answer in the extra passages: 2 was chosen on
    # the even half of 2Wiki DEV (experiments/answers/README.md, "Reader context sized to the
    # reader"), the odd half reports it
    small_reader_b: float = 1.0
    small_reader_documents: int = 2
    # precise reader, our prompts: a reply without "Answer:" (a small model often writes one sentence
    # and stops) gets one more short call for the span. continue = the model continues its reply
    # after "Answer:" (backends that can: vLLM, transformers); ask = a new turn asks for the short
    # answer; auto = continue where the backend can, else ask; none = the reply is the answer.
    answer_followup: str = checks.mode(Literal["auto", "continue", "ask", "none"], "auto")
    followup_max_tokens: int = 32
    # the reader's loop guard at generation: OpenAI's frequency_penalty (0: off; OpenAI-compatible
    # servers, and transformers as repetition_penalty 1 + this). A reply that loops anyway is read
    # up to its loop (answer.loops) whatever this is
    frequency_penalty: float = 0.0
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones)
    # merge
    merge: str = checks.mode(Literal["citation_units", "string_dedupe"], "citation_units")  # citation_units (Eq. 11) | string_dedupe (code)
    reader_context: str = checks.mode(Literal["numbered", "wikipedia_title"], "numbered")  # numbered ("[n] (title / id) text") | wikipedia_title (released)
    # the reader's answer: own (after the last "Answer:", cleaned to the span; a follow-up call when
    # there is none) | released (between the first and second "Answer:", else the whole reply)
    answer_extraction: str = checks.mode(Literal["own", "released"], "own")
    # the reader's atoms under merge=string_dedupe: score (best PPR score first) | sieve (released: a
    # question that was not decomposed keeps its sieve's order, the LLM's; a decomposed one is
    # score-sorted either way)
    context_order: str = checks.mode(Literal["score", "sieve"], "score")
    # seconds a reader request may wait for its reply once it holds its concurrency slot (its resends
    # included); past it the question's answer is "" and the reader call is counted as failed and
    # timed out. 0 / None: no limit. The released reader's is 60 (conf/fidelity/reference_code.yaml).
    # Honoured by the OpenAI-compatible client only (a warning names an in-process backend); not by a
    # streamed answer, nor by our precise reader's follow-up call
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.READERS.names())
        if self.timeout_s is not None and self.timeout_s < 0:
            raise ValueError(f"reader.timeout_s must be >= 0 (0 or null: no limit), got {self.timeout_s}")
        checks.positive(self, "max_tokens", "context_tokens", "whole_doc_tokens", "followup_max_tokens")
        checks.in_range(self, 0, None, "neighbour_sentences", "max_documents", "small_reader_documents")
        checks.in_range(self, 0.0, None, "small_reader_b")
        checks.in_range(self, 0.0, 2.0, "frequency_penalty")  # OpenAI's range, the negative half left out

    def document_limit(self, llm_documents: int | None, reader_params_b: float | None = None) -> int:
        """How many ranked documents the reader reads (0: as many as context_tokens holds):
        max_documents when set, else the LLM option's ``llm.reader_documents``, else
        small_reader_documents for a reader whose stated size (``llm.params_b``) is at most
        small_reader_b billion parameters."""
        if self.max_documents:
            return self.max_documents
        if llm_documents is not None:
            return llm_documents
        if reader_params_b is not None and reader_params_b <= self.small_reader_b:
            return self.small_reader_documents
        return 0

    def uses_documents(self, fidelity_preset: str) -> bool:
        """True when the reader's context is built by token budget from the ranked documents."""
        return self.context == "documents" or (self.context == "auto" and fidelity_preset != "reference_code")


# Which reader variants read each ReaderConfig field, a variant being the reader (reader.name after
# "dataset" is resolved) and what it reads (reader.context after "auto" is resolved): the context
# settings matter only for documents, the follow-up only for the precise reader with this
# project's prompts, and a retrieval-only run ("none") still builds the context its results
# return. Held to what the code reads by tests/answer/test_reader_reads.py.
READER_VARIANTS = ("precise/documents", "precise/atoms", "abstract/documents", "abstract/atoms",
                   "none/documents", "none/atoms")
_DOCUMENTS = tuple(v for v in READER_VARIANTS if v.endswith("/documents"))
_ANSWERING = tuple(v for v in READER_VARIANTS if not v.startswith("none/"))
READER_READS: dict[str, tuple[str, ...]] = {
    "name": READER_VARIANTS, "context": READER_VARIANTS, "max_tokens": _ANSWERING,
    **{f: _DOCUMENTS for f in ("context_tokens", "whole_doc_tokens", "neighbour_sentences", "atoms_first",
                               "max_documents", "small_reader_b", "small_reader_documents")},
    "frequency_penalty": _ANSWERING, "timeout_s": _ANSWERING,
    "reader_context": _ANSWERING, "answer_extraction": _ANSWERING,
    **{f: tuple(v for v in READER_VARIANTS if v.endswith("/atoms")) for f in ("merge", "context_order")},
    "answer_followup": ("precise/documents", "precise/atoms"),
    "followup_max_tokens": ("precise/documents", "precise/atoms"),
}


def reader_variant(cfg: ReaderConfig, *, dataset_reader: str = "precise", fidelity_preset: str = "paper") -> str:
    """``"<reader>/<context>"`` of a config, "dataset" and "auto" resolved: one of READER_VARIANTS."""
    name = dataset_reader if cfg.name == "dataset" else cfg.name
    return f"{name}/{'documents' if cfg.uses_documents(fidelity_preset) else 'atoms'}"


def unread_reader_settings(cfg: ReaderConfig, variant: str) -> list[str]:
    """ReaderConfig fields set away from their default that ``variant`` never reads, e.g.
    ``["context_tokens (read by precise/documents, ...)"]``; none for a variant READER_READS does not know."""
    if variant not in READER_VARIANTS:
        return []
    default = ReaderConfig()
    return [f"{f.name} (read by {', '.join(READER_READS[f.name])})" for f in dataclasses.fields(cfg)
            if variant not in READER_READS[f.name] and getattr(cfg, f.name) != getattr(default, f.name)]
