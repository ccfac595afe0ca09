"""atomicrag: Atom-Entity Graph retrieval-augmented generation.

Research harness: ``python -m atomicrag.run`` (Hydra). Library: see README "Use as a library".
"""
__version__ = "0.1.0"
