"""The harness's config schema (``harness_config``, conf/config.yaml), added to Hydra's store."""
from __future__ import annotations

from atomicrag.core.config import SCHEMAS
from atomicrag.harness.config import HarnessConfig

SCHEMAS["harness_config"] = HarnessConfig
