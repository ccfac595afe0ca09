#!/usr/bin/env python
"""A virtual environment that holds only what the lent GPU machine's image holds (plus the device
check's wheelhouse list), made from an installed environment without downloading anything.

The lent machine's image (``scripts/device/device_image_packages.txt``, read off the workplace's list of
the 'cuda' image) has PyTorch, numpy, transformers... but no omegaconf, hydra, igraph. An import the
image lacks must fail here, in CI, not on the device after minutes of lease. So the new venv sees
no site-packages of its own parent: its one ``.pth`` file points at a folder of symbolic links to
the allowed distributions of ``--from`` (their top-level modules and ``.dist-info``, read from each
distribution's RECORD), and nothing else. Packages in the list that ``--from`` lacks are reported
and left out (the image has them, this machine does not: a test needing one would fail here first).

This machine's versions are not the image's (transformers 5.25 here, 5.17 there): a newer one may
need a package the image's version does not (huggingface-hub 2 needs httpx2). Those needs, and
theirs, are linked too and printed as "local-version needs" (``local_needs``); the project's
code must not import them (tests/test_device_check.py checks that), so they cannot hide a gap.

    python scripts/device/emulate_device_image.py /tmp/image-venv                 # image packages alone
    python scripts/device/emulate_device_image.py /tmp/image-venv --also scripts/device/device_wheelhouse.txt

Prints the new interpreter's path last.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE_LIST = ROOT / "scripts" / "device" / "device_image_packages.txt"


def normalize(name: str) -> str:
    """PEP 503 name: lower case, runs of -_. as one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_names(path: Path) -> list[str]:
    """Distribution names of a list file: one a line, '#' comments, an optional ==version dropped."""
    names = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[=<>~! ;\[]", line, maxsplit=1)[0]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise ValueError(f"{path}:{n}: expected a distribution name (optionally ==version), got {line!r}")
        names.append(normalize(name))
    return names


def installed(site: Path) -> dict[str, Path]:
    """Normalized distribution name -> its .dist-info folder in ``site``."""
    out = {}
    for d in site.glob("*.dist-info"):
        name = d.name[: -len(".dist-info")].rsplit("-", 1)[0]
        out[normalize(name)] = d
    return out


def top_level(dist_info: Path) -> set[str]:
    """The top-level entries (modules, packages, .libs folders) a distribution installed."""
    tops = set()
    record = dist_info / "RECORD"
    if not record.is_file():
        raise FileNotFoundError(f"{record}: no RECORD, cannot tell what {dist_info.name} installed")
    for line in record.read_text().splitlines():
        path = line.split(",", 1)[0]
        if not path or path.startswith("..") or path.startswith("/"):
            continue  # scripts in bin/, data outside site-packages
        first = path.split("/", 1)[0]
        if first in ("__pycache__", dist_info.name) or first.endswith(".pth"):
            continue
        tops.add(first)
    return tops


def requirements(dist_info: Path) -> list[str]:
    """Normalized names a distribution requires unconditionally (no extras; markers for here)."""
    from email.parser import Parser

    from packaging.requirements import Requirement

    meta = Parser().parsestr((dist_info / "METADATA").read_text(errors="replace"))
    out = []
    for line in meta.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(normalize(req.name))
    return out


def local_needs(source_site: Path, names: list[str]) -> list[str]:
    """What the installed versions of ``names`` need beyond ``names``, with their needs in turn."""
    have = installed(source_site)
    allowed, extra = set(names), []
    todo = [n for n in names if n in have]
    while todo:
        for req in requirements(have[todo.pop()]):
            if req not in allowed and req in have:
                allowed.add(req)
                extra.append(req)
                todo.append(req)
    return sorted(extra)


def build(dest: Path, source_site: Path, names: list[str]) -> tuple[Path, list[str]]:
    """Make the venv at ``dest`` holding ``names`` and their local-version needs; return (its
    python, names the source lacks)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    links = dest / "image-site"
    links.mkdir()
    have = installed(source_site)
    missing = []
    for name in dict.fromkeys(names + local_needs(source_site, names)):
        info = have.get(name)
        if info is None:
            missing.append(name)
            continue
        for entry in top_level(info) | {info.name}:
            target = source_site / entry
            if target.exists() and not (links / entry).exists():
                os.symlink(target, links / entry)
    (site / "device_image.pth").write_text(f"{links}\n")
    return python, missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--from", dest="source", type=Path, default=Path(sysconfig.get_paths()["purelib"]),
                    help="site-packages to take the packages from (default: this interpreter's)")
    ap.add_argument("--packages", type=Path, default=IMAGE_LIST, help="the image's package list")
    ap.add_argument("--also", type=Path, action="append", default=[], help="more lists (the wheelhouse's)")
    args = ap.parse_args()
    names = read_names(args.packages)
    for extra in args.also:
        names += read_names(extra)
    python, missing = build(args.dest, args.source, names)
    print(f"local-version needs (linked too): {' '.join(local_needs(args.source, names)) or 'none'}", file=sys.stderr)
    if missing:
        print(f"not installed in {args.source}, left out: {' '.join(missing)}", file=sys.stderr)
    print(python)


if __name__ == "__main__":
    main()
