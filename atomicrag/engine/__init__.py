"""The one index/query engine shared by the research harness and the library (see ``core``)."""
from .core import Batch, ConfigModels, Engine, Models
from .index import CorpusIndex, combined_stats
from .needs import needs_llm, stage_needs
from .sampling import sampling

__all__ = ["Batch", "ConfigModels", "CorpusIndex", "Engine", "Models", "combined_stats", "needs_llm", "sampling",
           "stage_needs"]
