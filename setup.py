"""The one thing pyproject.toml cannot say: ``conf/`` (the Hydra presets) stays at the repository's
top level and ships inside the wheel as ``atomicrag/conf``, so a regular ``pip install`` finds it
(``atomicrag.core.presets`` looks in the package first, then beside it in a checkout)."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent
# every folder of conf/ as a data package (Hydra groups hold YAML only, no __init__.py)
CONF = {"atomicrag.conf" + "".join(f".{p}" for p in d.relative_to(HERE / "conf").parts): str(d.relative_to(HERE))
        for d in [HERE / "conf", *sorted(p for p in (HERE / "conf").rglob("*") if p.is_dir())]}

setup(
    packages=[*find_packages(include=["atomicrag", "atomicrag.*"]), *CONF],
    package_dir=CONF,
    # the smoke sets (atomicrag/datasets) and the paper's published numbers (atomicrag/published)
    # ship in the wheel, so the quickstart and make_tables need no download
    package_data={"atomicrag": ["py.typed", "published/*", "datasets/*.md", "datasets/*/SOURCE.md",
                                "datasets/*/smoke/*.jsonl"],
                  # *.table.yml: the paper tables' declarations beside their experiments (make_tables)
                  **{pkg: ["*.yaml", "*.table.yml"] for pkg in CONF}},
)
