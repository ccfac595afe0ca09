"""Evaluation: EM/F1 and recall@k (metrics), Graph-Bench answer accuracy (judge), table cells (aggregate)."""
