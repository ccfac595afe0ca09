"""What a run plan holds and how it prices: the per-stage record (``StagePlan``, ``RunPlan``), the
token count of a prompt, the model price table and the assumed sizes (reply tokens, embedders)
that ``harness.plan.plan_run`` fills it with."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from atomicrag.engine.api import MESSAGE_OVERHEAD

# Prices in USD per million tokens (input, output) of the hosted models the presets name; a local
# model (vllm, llamacpp, transformers, fake) costs nothing per token. Override per run with
# llm.price_per_mtok_in / llm.price_per_mtok_out (a negative value means: use this table).
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
}
LOCAL_BACKENDS = ("vllm", "llamacpp", "transformers", "fake")

# Parameters (millions) and hidden size of the embedders the configs name, for the GPU estimate.
EMBEDDER_SIZES: dict[str, tuple[float, int, int]] = {  # params (M), hidden, max sequence length
    "minilm": (22.7, 384, 512),
    "all-minilm-l6-v2": (22.7, 384, 512),
    "bge-large-en-v1.5": (335.0, 1024, 512),
    "bge-base-en-v1.5": (109.0, 768, 512),
    "bge-small-en-v1.5": (33.4, 384, 512),
    "contriever": (109.0, 768, 512),
    "nomic-embed-text-v1": (137.0, 768, 8192),
    "gte-qwen2-1.5b-instruct": (1540.0, 1536, 32768),
    "e5-large-v2": (335.0, 1024, 512),
}
# The committed runs the measured sizes below come from (tests/test_plan_assumptions.py derives
# each figure from its record again, so a record and its constant cannot drift apart):
# REPLY_RECORD, qwen2.5-coder-0.5b on the 2Wiki smoke set (5 questions), for the reply lengths;
# SIZES_RECORD, SmolLM2-135M on the same set (20 questions, top_k=25, decompose and sieve on), for
# the sieve's candidates and kept atoms and the graph's shape.
REPLY_RECORD = ("results/table2_smoke_qwen05b/2wikimultihopqa/smoke/"
                "ppr_minilm_sentence_minilm_qwen2_5-coder-0_5b-instruct_aqd-llm_as-llm_paper_ae9469c8")
SIZES_RECORD = ("results/table2_smoke/2wikimultihopqa/smoke/"
                "ppr_minilm_sentence_minilm_smollm2-135m-instruct_aqd-llm_as-llm_paper_88317ddf")
# Expected reply tokens per call (capped by each stage's budget): a reply is rarely its budget.
# decompose/sieve/reader: REPLY_RECORD's completion tokens per question (cost.modules decompose,
# sieve, answer over n_questions; the reader's follow-ups are part of what a question costs);
# the others are assumed: a JSON list of a passage's entities (ner, query_ner), its atoms restated
# (extraction: 1.5 x the passage), 3 short statement lists (judge).
EXPECTED_REPLY = {"ner": 60, "query_ner": 20, "decompose": 178, "sieve": 113, "reader": 38, "judge": 150}
EXTRACTION_REPLY_FACTOR = 1.5
ABSTRACT_READER_REPLY = 250
# Mean candidates merged into a sieve prompt under decomposition, as a multiple of top_k: the
# sub-questions' retrievals overlap the question's own. SIZES_RECORD's stages.sieve.candidates per
# question over retriever.top_k.
DECOMPOSED_CANDIDATE_FACTOR = 1.39
# Atoms a sieve keeps per question, for the reader's context after it: SIZES_RECORD's
# stages.sieve.kept per question.
SIEVE_KEPT_PER_QUESTION = 9.25
# Entities per atom and graph edges per node, for the graph's memory: SIZES_RECORD's graph_stats.
ENTITIES_PER_ATOM = 2.9
EDGES_PER_NODE = 1.3
# Characters per token of English text under the SmolLM2, Qwen and OpenAI BPE tokenizers. The
# prompt-fitting estimate (llm/budget.py) uses 3 on purpose, an over-count that keeps prompts inside
# the window; a plan wants the expected count.
PLAN_CHARS_PER_TOKEN = 4.0


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """Expected prompt tokens of a chat: its characters at PLAN_CHARS_PER_TOKEN, plus the chat
    template's tokens around each message."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return int(chars / PLAN_CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)


@dataclass
class StagePlan:
    stage: str  # ner | extraction | query_ner | decompose | sieve | reader | judge
    calls: int
    input_tokens: int
    output_tokens: int
    cached_calls: int = 0  # found in the LLM cache: free
    max_output_tokens: int = 0  # every reply at its completion budget: the upper bound
    note: str = ""
    price: tuple[float, float] | None = None  # USD per Mtok (in, out) of its own LLM; None: the run's

    @property
    def input_per_call(self) -> float:
        return self.input_tokens / self.calls if self.calls else 0.0


@dataclass
class RunPlan:
    label: str
    dataset: str
    split: str
    n_passages: int
    n_questions: int
    llm: str
    price_in: float  # USD per million input tokens
    price_out: float
    stages: list[StagePlan] = field(default_factory=list)
    # stages whose expected reply is fixed by what they ask (an abstract), not learned from runs
    fixed_replies: set[str] = field(default_factory=set)
    gpu_bytes: dict[str, int] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    data_files: list[str] = field(default_factory=list)  # what the plan read (hashed in its record)

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.stages)

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.stages)

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens for s in self.stages)

    def cost_usd(self, worst: bool = False) -> float:
        """Cost of the calls the cache does not answer (``worst``: every reply at its budget)."""
        total = 0.0
        for s in self.stages:
            paid = 1.0 - (s.cached_calls / s.calls if s.calls else 0.0)
            p_in, p_out = s.price or (self.price_in, self.price_out)
            out = s.max_output_tokens if worst else s.output_tokens
            total += paid * (s.input_tokens * p_in + out * p_out) / 1e6
        return total

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("data_files")  # hashed in the record's provenance instead
        out.pop("fixed_replies")  # said in the assumptions
        out.update(calls=self.calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                   cost_usd=round(self.cost_usd(), 4), max_cost_usd=round(self.cost_usd(worst=True), 4),
                   gpu_total_bytes=sum(self.gpu_bytes.values()))
        return out

    def format(self) -> str:
        head = (f"plan: {self.label} on {self.dataset}/{self.split}: {self.n_passages} passages, "
                f"{self.n_questions} questions, llm={self.llm} "
                f"(${self.price_in:g} in / ${self.price_out:g} out per Mtok)")
        lines = [head,
                 f"  {'stage':<11}{'calls':>8}{'cached':>8}{'in tok':>12}{'out tok':>12}"]
        lines[-1] += f"{'max out':>12}"
        for s in self.stages:
            lines.append(f"  {s.stage:<11}{s.calls:>8}{s.cached_calls:>8}{s.input_tokens:>12}"
                         f"{s.output_tokens:>12}{s.max_output_tokens:>12}  {s.note}".rstrip())
        lines.append(f"  {'total':<11}{self.calls:>8}{'':>8}{self.input_tokens:>12}{self.output_tokens:>12}"
                     f"{sum(s.max_output_tokens for s in self.stages):>12}")
        lines.append(f"  estimated cost: ${self.cost_usd():.2f}; at most ${self.cost_usd(worst=True):.2f} "
                     "(every reply at its budget); cached calls are free")
        gib = {k: v / 2**30 for k, v in self.gpu_bytes.items()}
        lines.append("  GPU memory (GiB, if on CUDA): " + ", ".join(f"{k} {v:.2f}" for k, v in gib.items())
                     + f"; total {sum(gib.values()):.2f}")
        lines.extend(f"  assumes: {a}" for a in self.assumptions)
        return "\n".join(lines)


def prices(cfg: Any) -> tuple[float, float]:
    """USD per million (input, output) tokens of ``cfg.llm``: its own price fields if set, else
    the table for hosted models, else 0 for a local model; an unknown hosted model is an error."""
    llm = cfg.llm
    own_in = getattr(llm, "price_per_mtok_in", -1.0)
    own_out = getattr(llm, "price_per_mtok_out", -1.0)
    if own_in >= 0 and own_out >= 0:
        return float(own_in), float(own_out)
    if llm.name in LOCAL_BACKENDS and not llm.base_url and not llm.base_urls:
        return 0.0, 0.0
    if llm.model in PRICES_PER_MTOK:
        return PRICES_PER_MTOK[llm.model]
    if llm.name in LOCAL_BACKENDS:  # a server the user runs: no per-token price unless given
        return 0.0, 0.0
    raise ValueError(f"llm.model={llm.model!r}: no price known; set llm.price_per_mtok_in and "
                     f"llm.price_per_mtok_out (USD per million tokens), known: {', '.join(PRICES_PER_MTOK)}")
