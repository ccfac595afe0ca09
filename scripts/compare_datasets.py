"""Compare two normalised dataset folders file by file and field by field; write the result as a record.

    python scripts/compare_datasets.py BUILT_DIR REFERENCE_DIR --out results/data_get/rebuild_check.json

For every ``*.jsonl`` file present in both ``<dir>/<dataset>/`` folders: rows in each, whether the
bytes are identical, how many rows differ and which fields (``meta.x`` for meta keys) differ. Used to
check that ``atomicrag data get`` rebuilds a known copy of the data exactly.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atomicrag.core.artifacts import write_json_atomic


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _fields(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    out = set()
    for k in set(a) | set(b):
        if k == "meta" and isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out |= {f"meta.{m}" for m in set(a[k]) | set(b[k]) if a[k].get(m) != b[k].get(m)}
        elif a.get(k) != b.get(k):
            out.add(k)
    return out


def compare(built: Path, reference: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for ds in sorted(p.name for p in built.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = {}
        for f in sorted((built / ds).rglob("*.jsonl")):
            rel = f.relative_to(built / ds)
            ref = reference / ds / rel
            if not ref.is_file():
                continue
            a, b = _rows(f), _rows(ref)
            differing = [_fields(x, y) for x, y in zip(a, b) if x != y]
            files[str(rel)] = {
                "rows": len(a), "reference_rows": len(b), "identical_bytes": f.read_bytes() == ref.read_bytes(),
                "sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "rows_differing": len(differing),
                "fields_differing": sorted(set().union(*differing)) if differing else []}
        result[ds] = files
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("built", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--command", default="", help="the command that built BUILT_DIR, kept in the record")
    args = ap.parse_args(argv)
    record = {"built": str(args.built), "reference": str(args.reference), "built_by": args.command,
              "datasets": compare(args.built, args.reference)}
    write_json_atomic(args.out, record)
    for ds, files in record["datasets"].items():
        for rel, r in files.items():
            print(f"{ds}/{rel}: {'identical' if r['identical_bytes'] else 'differs'} ({r['rows']} rows"
                  + (f"; {r['rows_differing']} rows differ in {', '.join(r['fields_differing'])}" if r["rows_differing"]
                     else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
