"""Old spellings of config fields: fields removed (ignored when a saved config holds them) and
released-code switches that moved into the section of the stage they change. Saved configs (index
manifests, run folders, dict and file sources) and Hydra overrides in an old spelling are read in
the new one, with a warning (``move_fields``, ``move_override``, ``move_overrides``)."""
from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import Any

# Fields that were deleted because no code read them: configs saved before (index manifests,
# run folders) still load; the value is ignored.
REMOVED_FIELDS = {("llm", "n_parallel")}


# Fidelity switches that moved into the section of the stage they change: (old section, field) ->
# new section, the field's name kept. Configs saved before (index manifests, run folders, dict and
# file sources) and overrides in the old spelling (``fidelity.containment_keys=raw``) still work.
MOVED_FIELDS: dict[tuple[str, str], str] = {
    **{("fidelity", f): "graph" for f in (
        "containment_keys", "relevance_weight", "synonym_overwrites_relevance", "entity_nodes", "triple_dedupe",
        "synonym_direction", "synonym_candidates", "entity_embedding_text", "atom_merge", "entity_keys")},
    **{("fidelity", f): "retriever" for f in (
        "damping_semantics", "dangling", "ppr_solve", "atom_seeding", "vector_index", "entity_link_fallback")},
    ("fidelity", "decompose_trigger"): "decompose", ("fidelity", "decompose_parse"): "decompose",
    ("fidelity", "sieve_target"): "sieve", ("fidelity", "sieve_prompt"): "sieve",
    **{("fidelity", f): "reader" for f in ("merge", "reader_context", "answer_extraction", "context_order")},
    **{("fidelity", f): "embedder" for f in ("embed_pooling", "embed_instruction", "embed_recipe_models",
                                             "embed_precision")},
    # the judge's section is the harness's (HarnessConfig.judge): the library's root has none, so
    # there these old spellings are dropped with a warning (``sections`` below)
    **{("fidelity", f): "judge" for f in ("acc_weight", "acc_similarity", "judge_failures", "judge_replies")},
}


def drop_removed(d: dict[str, Any], *, sections: Collection[str] | None = None) -> dict[str, Any]:
    out = move_fields(d, sections=sections)
    for section, name in REMOVED_FIELDS:
        if isinstance(out.get(section), dict) and name in out[section]:
            out[section] = {k: v for k, v in out[section].items() if k != name}
    return out


def move_fields(d: dict[str, Any], *, sections: Collection[str] | None = None, warn: bool = True) -> dict[str, Any]:
    """``d`` (a nested config dict: a dict source, a saved manifest or run folder's config) with
    every moved field under its new section; a value already given under the new name wins over
    the old spelling. ``sections``: the sections of the config being loaded (None: any); a field
    whose new section is not among them (the judge's, under the library's root) is dropped, since
    nothing there reads it. ``warn``: log which old spellings were read."""
    out = dict(d)
    moved, dropped = [], []
    for (old, name), new in MOVED_FIELDS.items():
        section = out.get(old)
        if isinstance(section, dict) and name in section:
            out[old] = {k: v for k, v in section.items() if k != name}
            if sections is not None and new not in sections:
                dropped.append(f"{old}.{name} (now {new}.{name})")
                continue
            target = out.get(new)
            target = dict(target) if isinstance(target, dict) else {}
            target.setdefault(name, section[name])
            out[new] = target
            moved.append(f"{old}.{name} -> {new}.{name}")
    log = logging.getLogger("atomicrag")
    if warn and moved:
        log.warning("a config in the old spelling: read %s", _some(moved))
    if warn and dropped:
        log.warning("ignored %s: this config has no such section", _some(dropped))
    return out


def _some(names: list[str], shown: int = 8) -> str:
    """``names`` joined for a warning, the first ``shown`` of them (a saved config may hold dozens)."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def move_override(override: str, *, warn: bool = True) -> str:
    """A Hydra override in a moved field's old spelling, in its new one (``fidelity.merge=x`` ->
    ``reader.merge=x``; ``warn``: log that it moved); any other override unchanged."""
    key, eq, value = override.partition("=")
    prefix = key[: len(key) - len(key.lstrip("+~"))]
    old, dot, name = key[len(prefix):].partition(".")
    new = MOVED_FIELDS.get((old, name)) if dot else None
    if new is None:
        return override
    if warn:
        logging.getLogger("atomicrag").warning("%s.%s is now %s.%s; read as that", old, name, new, name)
    return f"{prefix}{new}.{name}{eq}{value}"


def move_overrides(overrides: Iterable[str], *, sections: Collection[str] | None = None) -> list[str]:
    """``overrides`` with each old spelling in its new one (``move_override``, with a warning);
    ``sections``: the sections of the config being composed (None: any), an old spelling whose new
    section is not among them (the judge's, under the library's root) is dropped with a warning."""
    out = []
    for override in overrides:
        moved = move_override(override, warn=False)
        if moved != override:
            key = override.partition("=")[0].lstrip("+~")
            new_key = moved.partition("=")[0].lstrip("+~")
            if sections is not None and new_key.partition(".")[0] not in sections:
                logging.getLogger("atomicrag").warning("ignored %s (now %s): this config has no such section",
                                                       key, new_key)
                continue
            logging.getLogger("atomicrag").warning("%s is now %s; read as that", key, new_key)
        out.append(moved)
    return out
