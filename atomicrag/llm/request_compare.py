"""Comparing what two clients sent through one ``RecordProxy``: per stage, the bodies both sent,
each side's extra ones, the first difference, the parameters that differ where the prompts are the
same, and tokens. Bodies are the same request when their keys are (``request_keys.request_key``:
fields left at the API default and the spelling of sampling numbers aside); where two such bodies
still differ in spelling (``n: 1`` written out, ``temperature`` 0 vs 0.0) the report names the
fields under ``spelled_differently``."""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """The key text of a request body: sorted keys, compact separators, non-ASCII kept as is."""
    import json

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_request_log(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a request log (one JSON object per line; a bad line names the file and line)."""
    from atomicrag.core.artifacts import read_jsonl

    return read_jsonl(path)


def first_difference(a: Any, b: Any, where: str = "$", window: int = 60) -> str | None:
    """A short path and values of the first place two JSON values differ; None when equal. Strings
    are shown ``window`` characters either side of the first differing character (a report that is
    committed keeps this short: the texts may be prompts that are not ours to store)."""
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'second' if k not in a else 'first'}"
            d = first_difference(a[k], b[k], f"{where}.{k}", window)
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]", window)
            if d:
                return d
        return None if len(a) == len(b) else f"{where}: length {len(a)} vs {len(b)}"
    if a != b:
        if isinstance(a, str) and isinstance(b, str):
            i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            lo = max(0, i - window)
            return f"{where} @char {i}: {a[lo:i + window]!r} vs {b[lo:i + window]!r}"
        return f"{where}: {a!r} vs {b!r}"
    return None


def compare_labels(entries: list[dict[str, Any]], first: str, second: str, window: int = 60) -> dict[str, Any]:
    """Per stage: requests each label sent, bodies both sent (multiset), each label's extra ones,
    the first differing pair (the n-th unmatched body of each side, in send order), and tokens.

    A request the client's HTTP layer sent again (``client_retry`` > 0 in the log: the OpenAI SDK's
    own retry after a connection error) after the same label's proxy already logged that body is
    counted under ``resent_<label>`` and left out of the comparison: the pipeline asked once. A
    retried request whose earlier attempts never reached the proxy is the one request asked."""
    by: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {first: [], second: []})
    resent: dict[str, Counter] = defaultdict(Counter)
    arrived: Counter = Counter()  # (label, key) -> requests of that body that reached the proxy
    for e in entries:
        if e.get("method") == "POST" and e.get("label") in (first, second):
            if int(e.get("client_retry") or 0) > 0 and arrived[(e["label"], e["key"])]:
                resent[e["stage"]][e["label"]] += 1
                continue
            arrived[(e["label"], e["key"])] += 1
            by[e["stage"]][e["label"]].append(e)
    report: dict[str, Any] = {}
    for stage in sorted(by):
        a, b = by[stage][first], by[stage][second]
        ca, cb = Counter(e["key"] for e in a), Counter(e["key"] for e in b)
        common = sum((ca & cb).values())
        only_a = [e for e in a if not _take(ca, cb, e["key"])]
        ca, cb = Counter(e["key"] for e in a), Counter(e["key"] for e in b)
        only_b = [e for e in b if not _take(cb, ca, e["key"])]
        diff = None
        if only_a and only_b:
            diff = first_difference(only_a[0]["body"], only_b[0]["body"], window=window)
        elif only_a or only_b:
            diff = f"only {first if only_a else second} sent {len(only_a or only_b)} more request(s)"
        # the messages alone (sampling parameters aside): is the prompt the same, only the settings not?
        ma, mb = Counter(_messages_key(e) for e in a), Counter(_messages_key(e) for e in b)
        messages_equal = sum((ma & mb).values())
        param_diff = None
        fields: set[str] = set()  # top-level body fields that differ where the messages are the same
        by_msg = {_messages_key(e): e for e in b}
        for e in a:
            other = by_msg.get(_messages_key(e))
            if other is not None and other["key"] != e["key"]:
                param_diff = param_diff or first_difference(e["body"], other["body"], window=window)
                x, y = e["body"], other["body"]
                fields |= {k for k in set(x) | set(y) if k != "messages" and x.get(k) != y.get(k)}
        spelled: set[str] = set()  # fields written differently in bodies that are the same request
        by_key = {e["key"]: e for e in b}
        for e in a:
            other = by_key.get(e["key"])
            if other is not None and isinstance(e["body"], dict) and isinstance(other["body"], dict):
                x, y = e["body"], other["body"]
                spelled |= {k for k in set(x) | set(y) if k != "messages" and (
                    k not in x or k not in y or canonical_json(x[k]) != canonical_json(y[k]))}
        report[stage] = {
            f"n_{first}": len(a), f"n_{second}": len(b), "equal": common, "messages_equal": messages_equal,
            "first_parameter_difference": param_diff, "differing_parameters": sorted(fields),
            "spelled_differently": sorted(spelled),
            f"only_{first}": len(only_a), f"only_{second}": len(only_b), "first_difference": diff,
            f"tokens_{first}": _tokens(a), f"tokens_{second}": _tokens(b),
            f"resent_{first}": resent[stage][first], f"resent_{second}": resent[stage][second],
        }
    return report


def _messages_key(entry: dict[str, Any]) -> str:
    body = entry.get("body")
    msgs = body.get("messages", body.get("prompt")) if isinstance(body, dict) else body
    return canonical_json(msgs)


def _take(mine: Counter, theirs: Counter, key: str) -> bool:
    """Match one occurrence of ``key`` against the other side; False when nothing is left to match."""
    if theirs[key] > 0:
        theirs[key] -= 1
        return True
    return False


def _tokens(entries: list[dict[str, Any]]) -> dict[str, int]:
    p = sum(int((e.get("usage") or {}).get("prompt_tokens") or 0) for e in entries)
    c = sum(int((e.get("usage") or {}).get("completion_tokens") or 0) for e in entries)
    return {"prompt": p, "completion": c}
