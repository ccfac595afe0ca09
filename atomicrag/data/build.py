"""Build the normalised layout of a benchmark from its public source files.

Per dataset, under ``<out>/<name>/`` (the layout ``loaders.load_normalized`` reads):

* ``corpus.jsonl`` (``id, title, text[, corpus]``) and, where the source has one, ``corpus_raw.jsonl``
  (Graph-Bench's unchunked documents) or ``corpus_atomicrag_chunks.jsonl`` (the authors' 2Wiki chunks);
* ``questions.jsonl`` (``id, question, answers, question_type, supporting_ids, evidence, corpus, meta``);
* ``questions.dev.jsonl`` / ``questions.heldout.jsonl``: a deterministic split, stratified, about 2/3 : 1/3;
* ``smoke/{corpus,questions}.jsonl``: 20 DEV questions with their support and 80 distractors;
* ``sources.json``: the source files used (URL, commit, checksums, whether they are the pinned revision).

Everything is a pure function of the source files: the split orders questions by
``sha256("atomicrag-repro-split-v1:" + id)``, so two users with the same files get the same output.
"""
from __future__ import annotations

import collections
import hashlib
import itertools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from atomicrag.core.artifacts import write_json_atomic, write_jsonl_atomic
from atomicrag.data.gold_2wiki import derive_gold
from atomicrag.data.validate import DataError, read_json

SEED = "atomicrag-repro-split-v1"
DEV_FRACTION = 2 / 3
N_SMOKE = 20
N_DISTRACT = 80

Row = dict[str, Any]


def h(*parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def split_dev_heldout(questions: list[Row], stratum_of: Callable[[Row], Any]) -> tuple[list[Row], list[Row]]:
    """Inside each stratum, order by ``sha256(SEED:id)``; the first ``round(n*2/3)`` go to DEV."""
    strata: dict[Any, list[Row]] = collections.defaultdict(list)
    for q in questions:
        strata[stratum_of(q)].append(q)
    dev_ids: set[str] = set()
    for qs in strata.values():
        qs = sorted(qs, key=lambda q: h(SEED, q["id"]))
        dev_ids.update(q["id"] for q in qs[: math.floor(len(qs) * DEV_FRACTION + 0.5)])
    return [q for q in questions if q["id"] in dev_ids], [q for q in questions if q["id"] not in dev_ids]


def pick_smoke(dev: list[Row], stratum_of: Callable[[Row], Any], n: int = N_SMOKE,
               exclude: set[str] | frozenset[str] = frozenset()) -> list[Row]:
    """``n`` DEV questions round-robin over the strata (by name), each ordered by ``sha256(SEED:smoke:id)``."""
    strata: dict[Any, list[Row]] = collections.defaultdict(list)
    for q in dev:
        if q["id"] not in exclude:
            strata[stratum_of(q)].append(q)
    for qs in strata.values():
        qs.sort(key=lambda q: h(SEED, "smoke", q["id"]))
    keys = sorted(strata)
    picked: list[Row] = []
    i = 0
    while len(picked) < n and any(strata[k] for k in keys):
        k = keys[i % len(keys)]
        if strata[k]:
            picked.append(strata[k].pop(0))
        i += 1
    return picked


# ----------------------------------------------------------------------------- readers
def _json_list(path: Path, what: str) -> list[Any]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(path, None, None, f"expected a JSON list of {what}, got {type(data).__name__}")
    return data


def _chunks(path: Path) -> list[str]:
    rows = _json_list(path, "chunk strings")
    for i, t in enumerate(rows, 1):
        if not isinstance(t, str) or not t.strip():
            raise DataError(path, i, None, f"expected a non-empty chunk string, got {type(t).__name__}", unit="record")
    return rows


def _qa_records(path: Path, need: Sequence[str] = ("id", "question", "answer")) -> list[Row]:
    rows = _json_list(path, "question records")
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            raise DataError(path, i, None, f"expected an object, got {type(r).__name__}", unit="record")
        for k in need:
            if k not in r:
                raise DataError(path, i, k, "missing required field", unit="record")
        if not isinstance(r["id"], str) or not isinstance(r["question"], str) or not isinstance(r["answer"], str):
            raise DataError(path, i, "id/question/answer", "expected strings", unit="record")
    return rows


def _parquet(path: Path) -> list[Row]:
    import pyarrow.parquet as pq

    return list(pq.read_table(path).to_pylist())


# ----------------------------------------------------------------------------- writers
def _write_splits(out: Path, questions: list[Row], stratum_of: Callable[[Row], Any]) -> tuple[list[Row], list[Row]]:
    write_jsonl_atomic(out / "questions.jsonl", questions)
    dev, held = split_dev_heldout(questions, stratum_of)
    write_jsonl_atomic(out / "questions.dev.jsonl", dev)
    write_jsonl_atomic(out / "questions.heldout.jsonl", held)
    return dev, held


# ----------------------------------------------------------------------------- Graph-Bench
def build_medical(files: dict[str, Path], out: Path) -> dict[str, Any]:
    """Graph-Bench Medical: the authors' chunks (kept byte for byte) and their revised questions."""
    chunks = _chunks(files["atomicrag:dataset/medical/Medical/chunks.json"])
    qs = _qa_records(files["atomicrag:dataset/medical/Medical/questions.json"])
    pq_path = files.get("atomicrag:datasets/atomicrag/abstract_qa/Questions/medical_questions.parquet")
    relations = {r["id"]: r.get("evidence_relations") for r in _parquet(pq_path)} if pq_path else None
    gb_q_path = files.get("graphrag_bench:Datas/Questions/medical_questions.json")
    gb_answers = {r["id"]: r.get("answer") for r in _qa_records(gb_q_path)} if gb_q_path else None
    corpus = [{"id": f"medical-c{i:04d}", "title": "", "text": t, "corpus": "Medical"} for i, t in enumerate(chunks)]
    write_jsonl_atomic(out / "corpus.jsonl", corpus)
    if raw_path := files.get("graphrag_bench:Datas/Corpus/medical.json"):
        raw = _json_list(raw_path, "documents")[0]
        write_jsonl_atomic(out / "corpus_raw.jsonl", [{"id": "Medical", "title": raw["corpus_name"],
                                                        "text": raw["context"]}])
    questions = []
    for q in qs:
        meta: Row = {"source": q.get("source")}
        if relations is not None:
            meta["evidence_relations"] = relations.get(q["id"])
        if gb_answers is not None and q["id"] in gb_answers and gb_answers[q["id"]] != q["answer"]:
            meta["graphrag_bench_github_answer"] = gb_answers[q["id"]]
        questions.append({"id": q["id"], "question": q["question"], "answers": [q["answer"]],
                          "question_type": q.get("question_type", ""), "supporting_ids": [],
                          "evidence": q.get("evidence"), "corpus": "Medical", "meta": meta})
    dev, _ = _write_splits(out, questions, lambda q: q["question_type"])
    smoke = _smoke_graphbench(pick_smoke(dev, lambda q: q["question_type"]), corpus, out, "medical")
    return {"passages": len(corpus), "questions": len(questions), "dev": len(dev), "smoke": smoke}


# what was found by reading the clashing records of the release
KNOWN_ISSUES = {"Novel-55f0c0e2": "AtomicRAG has this id twice (Novel-4128 and Novel-47558); the Novel-4128 record "
                "carries the Novel-47558 question text and the Novel-47558 record carries the Novel-4128 evidence. "
                "Kept as in AtomicRAG."}


def build_novel(files: dict[str, Path], out: Path) -> dict[str, Any]:
    """Graph-Bench Novel: one corpus per novel (``corpus`` names it), chunks kept byte for byte."""
    novels = sorted({k.split("/")[2] for k in files if k.startswith("atomicrag:dataset/novel/")})
    pq_path = files.get("atomicrag:datasets/atomicrag/abstract_qa/Questions/novel_questions.parquet")
    triples: dict[tuple[str, str], Any] | None = None
    if pq_path:
        triples = {}
        for r in _parquet(pq_path):
            triples.setdefault((r["id"], r["source"]), r.get("evidence_triple"))
    corpus: list[Row] = []
    all_q: list[tuple[str, Row]] = []
    for novel in novels:
        for i, t in enumerate(_chunks(files[f"atomicrag:dataset/novel/{novel}/chunks.json"])):
            corpus.append({"id": f"{novel}-c{i:04d}", "title": "", "text": t, "corpus": novel})
        all_q += [(novel, q) for q in _qa_records(files[f"atomicrag:dataset/novel/{novel}/questions.json"])]
    # the release reuses one id in two novels for two different records: both are kept, renamed
    counts = collections.Counter(q["id"] for _, q in all_q)
    questions = []
    for novel, q in all_q:
        qid = q["id"] if counts[q["id"]] == 1 else f"{q['id']}@{novel}"
        meta: Row = {"source": novel}
        if triples is not None:
            meta["evidence_triple"] = triples.get((q["id"], novel))
        if qid != q["id"]:
            meta["original_id"] = q["id"]
            meta["known_issue"] = KNOWN_ISSUES.get(q["id"], f"the release has id {q['id']} in more than one "
                                                   "novel; kept as released, renamed <id>@<novel>")
        questions.append({"id": qid, "question": q["question"], "answers": [q["answer"]],
                          "question_type": q.get("question_type", ""), "supporting_ids": [],
                          "evidence": q.get("evidence"), "corpus": novel, "meta": meta})
    write_jsonl_atomic(out / "corpus.jsonl", corpus)
    if raw_path := files.get("atomicrag:datasets/atomicrag/abstract_qa/Corpus/novel.parquet"):
        raw = sorted(_parquet(raw_path), key=lambda r: r["corpus_name"])
        write_jsonl_atomic(out / "corpus_raw.jsonl", [{"id": r["corpus_name"], "title": r["corpus_name"],
                                                       "text": r["context"], "corpus": r["corpus_name"]} for r in raw])
    dev, _ = _write_splits(out, questions, lambda q: (q["corpus"], q["question_type"]))
    # smoke: one novel (each novel is its own index): the one with most DEV Creative Generation
    # questions, ties by name; renamed (clashing) records are left out
    flagged = {q["id"] for q in questions if "known_issue" in q["meta"]}
    cg = collections.Counter(q["corpus"] for q in dev if q["question_type"] == "Creative Generation")
    ranked = sorted(cg.items(), key=lambda kv: (-kv[1], kv[0])) or [(novels[0], 0)]
    chosen = ranked[0][0]
    smoke_qs = pick_smoke([q for q in dev if q["corpus"] == chosen], lambda q: q["question_type"], exclude=flagged)
    smoke = _smoke_graphbench(smoke_qs, corpus, out, "novel")
    smoke["novel"] = chosen
    return {"passages": len(corpus), "questions": len(questions), "novels": len(novels), "dev": len(dev),
            "smoke": smoke}


_STOP_WORDS = """a an the of and or to in on at by for with from as is are was were be been being this that
these those it its into than then there their they he she his her him them who whom whose which what when
where why how not no but also has have had do does did can could would should may might will shall about
after before during over under between such other some any each all both more most very"""
STOP = frozenset(_STOP_WORDS.split())


def _stems(text: str) -> list[str]:
    """Content-word stems: accents stripped, lower-cased, stop words dropped, cut to 5 characters."""
    t = unicodedata.normalize("NFKD", text)
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).lower()
    return [w[:5] for w in re.sub(r"[^0-9a-z]+", " ", t).split() if len(w) > 1 and w not in STOP]


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", unicodedata.normalize("NFKD", text).lower()).split())


def _support(q: Row, rows: list[Row]) -> list[tuple[int, float, str]]:
    """Heuristic support chunks of a Graph-Bench question (the benchmark has no gold chunk ids).

    Each evidence sentence takes its best chunk by 0.6 x IDF-weighted stem recall + 0.4 x stem-bigram
    recall, kept at >= 0.5; if no sentence reaches that, the best sentence match and the 3 chunks best
    matching the whole evidence; chunks holding a short answer verbatim are added; at most 4.
    """
    toks = [_stems(r["text"]) for r in rows]
    sets = [(set(t), set(itertools.pairwise(t))) for t in toks]
    df: collections.Counter[str] = collections.Counter()
    for s, _ in sets:
        df.update(s)
    idf = {t: math.log(1 + len(rows) / c) for t, c in df.items()}

    def score(words: list[str], i: int) -> float:
        st, sb = set(words), set(itertools.pairwise(words))
        denom = sum(idf.get(t, 1.0) for t in st) or 1.0
        uni = sum(idf.get(t, 1.0) for t in st & sets[i][0]) / denom
        bi = len(sb & sets[i][1]) / len(sb) if sb else uni
        return 0.6 * uni + 0.4 * bi

    sents = [s.strip() for s in re.split(r";\s+|(?<=[.!?])\s+(?=[A-Z])", q.get("evidence") or "") if s.strip()]
    per_sent = [max(((score(w, i), i) for i in range(len(rows))), default=(0.0, -1))
                for s in sents if (w := _stems(s))]
    good = [b for b in per_sent if b[1] >= 0 and b[0] >= 0.5]
    if not good:
        words = _stems(" ".join(sents) or q["question"])
        st, sb = set(words), set(itertools.pairwise(words))
        denom = sum(idf.get(t, 1.0) for t in st) or 1.0
        whole = sorted(((0.6 * sum(idf.get(t, 1.0) for t in st & sets[i][0]) / denom
                         + 0.4 * (len(sb & sets[i][1]) / len(sb) if sb else 0.0), i) for i in range(len(rows))),
                       reverse=True)
        good = sorted(per_sent, reverse=True)[:1] + whole[:3]
    found: dict[int, tuple[float, str]] = {}
    for sc, i in good:
        if i >= 0 and (i not in found or found[i][0] < sc):
            found[i] = (round(sc, 3), "evidence_overlap")
    ans = _flat(q["answers"][0]) if q["answers"] else ""
    if ans and len(ans.split()) <= 8 and len(ans) >= 4:
        for i, r in enumerate(rows):
            if f" {ans} " in f" {_flat(r['text'])} ":
                found.setdefault(i, (1.0, "answer_string"))
    ranked = sorted(found.items(), key=lambda kv: -kv[1][0])[:4]
    return [(i, sc, why) for i, (sc, why) in ranked]


SUPPORT_SOURCE = ("heuristic (smoke only): chunk with best overlap with each evidence sentence (0.6*IDF-weighted "
                  "stem recall + 0.4*stem-bigram recall, kept if >= 0.5; if no sentence reaches 0.5, the best sentence "
                  "match plus the 3 chunks best matching the whole evidence), plus chunks containing the short "
                  "answer verbatim; no gold chunk ids exist for Graph-Bench")


def _smoke_graphbench(smoke_qs: list[Row], corpus: list[Row], out: Path, tag: str) -> dict[str, Any]:
    by_corpus: dict[str, list[Row]] = collections.defaultdict(list)
    for r in corpus:
        by_corpus[r.get("corpus", "")].append(r)
    keep: dict[str, Row] = {}
    sm_questions = []
    for q in smoke_qs:
        rows = by_corpus[q["corpus"]]
        sup = _support(q, rows)
        for i, _, _ in sup:
            keep[rows[i]["id"]] = rows[i]
        sm_questions.append(dict(q, supporting_ids=[rows[i]["id"] for i, _, _ in sup], meta=dict(
            q["meta"], supporting_ids_source=SUPPORT_SOURCE,
            support_scores=[{"id": rows[i]["id"], "score": sc, "reason": why} for i, sc, why in sup])))
    support = set(keep)
    position = {r["id"]: (c, i) for c, rows in by_corpus.items() for i, r in enumerate(rows)}
    distract: list[Row] = []
    seen: set[str] = set()
    for d in (1, 2):  # neighbours of the support chunks first: the hardest distractors
        for sid in sorted(support):
            c, i = position[sid]
            for j in (i - d, i + d):
                if 0 <= j < len(by_corpus[c]):
                    rid = by_corpus[c][j]["id"]
                    if rid not in support and rid not in seen:
                        distract.append(by_corpus[c][j])
                        seen.add(rid)
    distract = distract[: N_DISTRACT // 2]
    seen = {r["id"] for r in distract}
    pool = [r for c in sorted({q["corpus"] for q in smoke_qs}) for r in by_corpus[c]
            if r["id"] not in support and r["id"] not in seen]
    pool.sort(key=lambda r: h(SEED, tag, r["id"]))
    distract += pool[: N_DISTRACT - len(distract)]
    order = {r["id"]: k for k, r in enumerate(corpus)}
    sm_corpus = sorted(list(keep.values()) + distract, key=lambda r: order[r["id"]])
    write_jsonl_atomic(out / "smoke" / "corpus.jsonl", sm_corpus)
    write_jsonl_atomic(out / "smoke" / "questions.jsonl", sm_questions)
    return {"questions": len(sm_questions), "support": len(support), "distractors": len(distract)}


# ----------------------------------------------------------------------------- 2Wiki
def build_2wiki(files: dict[str, Path], out: Path) -> dict[str, Any]:
    """HippoRAG's 2Wiki corpus with the AtomicRAG question records and gold derived from their evidence."""
    cpath = files["hipporag:reproduce/dataset/2wikimultihopqa_corpus.json"]
    corpus_src = _json_list(cpath, "{title, text} passages")
    for i, p in enumerate(corpus_src, 1):
        if not isinstance(p, dict) or not isinstance(p.get("title"), str) or not isinstance(p.get("text"), str):
            raise DataError(cpath, i, "title/text", "expected an object with string title and text", unit="record")
    qpath = files["atomicrag:dataset/2wikimultihop/2WikiMultiHop/questions.json"]
    qs = _qa_records(qpath, ("id", "question", "answer", "evidence"))
    gold = derive_gold(corpus_src, qs)

    def pid(i: int) -> str:
        return f"2wiki-{i:05d}"

    corpus = [{"id": pid(i), "title": p["title"], "text": p["text"]} for i, p in enumerate(corpus_src)]
    write_jsonl_atomic(out / "corpus.jsonl", corpus)
    if apath := files.get("atomicrag:dataset/2wikimultihop/2WikiMultiHop/chunks.json"):
        write_jsonl_atomic(out / "corpus_atomicrag_chunks.jsonl",
                           [{"id": f"2wiki-achunk-{i:04d}", "title": "", "text": t} for i, t in enumerate(_chunks(apath))])
    questions = [{"id": q["id"], "question": q["question"], "answers": [q["answer"]],
                  "question_type": q.get("question_type", ""),
                  "supporting_ids": [pid(i) for i in gold[q["id"]]["gold_idx"]],
                  "evidence": q["evidence"], "corpus": "2wikimultihopqa",
                  "meta": {"supporting_ids_source": "derived from evidence subjects (atomicrag.data.gold_2wiki)",
                           "gold_match_methods": gold[q["id"]]["method"]}} for q in qs]
    dev, _ = _write_splits(out, questions, lambda q: q["question_type"])
    smoke_qs = pick_smoke(dev, lambda q: q["question_type"])
    # smoke corpus: the gold passages plus each question's own neighbourhood of HippoRAG's corpus,
    # which holds that question's original 2Wiki distractor paragraphs
    gold_idx = {i for q in smoke_qs for i in gold[q["id"]]["gold_idx"]}
    per_q = math.ceil(N_DISTRACT / max(1, len(smoke_qs)))
    distract: list[int] = []
    for q in smoke_qs:
        gi = sorted(gold[q["id"]]["gold_idx"]) or [0]
        centre = gi[len(gi) // 2]
        near = sorted((abs(j - centre), j) for j in range(max(0, centre - 12), min(len(corpus), centre + 13))
                      if j not in gold_idx and j not in distract)
        distract += [j for _, j in near[:per_q]]
    keep = sorted(gold_idx | set(distract[:N_DISTRACT]))
    write_jsonl_atomic(out / "smoke" / "corpus.jsonl", [corpus[i] for i in keep])
    write_jsonl_atomic(out / "smoke" / "questions.jsonl", smoke_qs)
    unresolved = sum(1 for g in gold.values() for m in g["method"] if m.startswith("unresolved:"))
    return {"passages": len(corpus), "questions": len(questions), "dev": len(dev),
            "unresolved_subjects": unresolved, "smoke": {"questions": len(smoke_qs), "corpus": len(keep)}}


# ----------------------------------------------------------------------------- MuSiQue
def build_musique(files: dict[str, Path], out: Path) -> dict[str, Any]:
    """The AtomicRAG MuSiQue questions; with HippoRAG's ``musique.json`` and ``musique_corpus.json``
    also the corpus and the gold paragraphs (``is_supporting``) and answer aliases."""
    qs = _qa_records(files["atomicrag:dataset/musique/Musique/questions.json"])
    cpath = files.get("hipporag:reproduce/dataset/musique_corpus.json")
    hpath = files.get("hipporag:reproduce/dataset/musique.json")
    corpus: list[Row] = []
    hippo: dict[str, Row] = {}
    if cpath and hpath:
        corpus = [{"id": f"musique-{i:05d}", "title": p["title"], "text": p["text"]}
                  for i, p in enumerate(_json_list(cpath, "{title, text} passages"))]
        hippo = {str(r.get("id", r.get("_id"))): r for r in _json_list(hpath, "question records")}
        write_jsonl_atomic(out / "corpus.jsonl", corpus)
    by_text: dict[tuple[str, str], str] = {(p["title"], p["text"].strip()): p["id"] for p in corpus}
    questions = []
    for q in qs:
        hid = q["id"].removeprefix("musique_")
        h_row = hippo.get(hid)
        support: list[str] = []
        answers = [q["answer"]]
        meta: Row = {"hipporag_id": hid, "hop_type": hid.split("__")[0], "gold_available": h_row is not None,
                     "answer_aliases_available": h_row is not None}
        if h_row is not None:
            for para in h_row.get("paragraphs") or []:
                if para.get("is_supporting"):
                    key = (para.get("title", ""), (para.get("paragraph_text") or para.get("text") or "").strip())
                    if key in by_text and by_text[key] not in support:
                        support.append(by_text[key])
            answers += [a for a in h_row.get("answer_aliases") or [] if a not in answers]
        questions.append({"id": q["id"], "question": q["question"], "answers": answers,
                          "question_type": q.get("question_type", ""), "supporting_ids": support,
                          "evidence": q.get("evidence") or None, "corpus": "musique", "meta": meta})
    dev, _ = _write_splits(out, questions, lambda q: q["meta"]["hop_type"])
    return {"passages": len(corpus), "questions": len(questions), "dev": len(dev),
            "with_gold": sum(1 for q in questions if q["supporting_ids"])}


# ----------------------------------------------------------------------------- HotpotQA
def build_hotpotqa(files: dict[str, Path], out: Path) -> dict[str, Any]:
    """HippoRAG's HotpotQA subset: ``hotpotqa_corpus.json`` and ``hotpotqa.json``, whose
    ``supporting_facts`` titles give the gold passages (read by the project's HippoRAG loader)."""
    from atomicrag.core.config import DatasetConfig
    from atomicrag.data.formats import load_hipporag

    qpath = files["hipporag:reproduce/dataset/hotpotqa.json"]
    cpath = files["hipporag:reproduce/dataset/hotpotqa_corpus.json"]
    if cpath != qpath.with_name("hotpotqa_corpus.json"):
        raise FileNotFoundError(f"HotpotQA: {cpath.name} must sit beside {qpath} (found {cpath})")
    passages, qs, _ = load_hipporag(DatasetConfig(name="hotpotqa", format="hipporag", path=str(qpath)),
                                    qpath.parent, True)
    corpus = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]
    write_jsonl_atomic(out / "corpus.jsonl", corpus)
    questions = [{"id": q.id, "question": q.question, "answers": q.answers, "question_type": q.question_type,
                  "supporting_ids": q.supporting_ids, "evidence": q.evidence, "corpus": "hotpotqa", "meta": q.meta}
                 for q in qs]
    dev, _ = _write_splits(out, questions, lambda q: q["question_type"])
    return {"passages": len(corpus), "questions": len(questions), "dev": len(dev),
            "with_gold": sum(1 for q in questions if q["supporting_ids"])}


def write_sources(out: Path, used: dict[str, Path], mismatched: list[str], licence: str) -> None:
    """``sources.json``: what the folder was built from, so a result can name its inputs."""
    from atomicrag.data.sources import BY_PATH

    rows = []
    for key, path in sorted(used.items()):
        repo, rel = key.split(":", 1)
        f = BY_PATH[(repo, rel)]
        rows.append({"file": rel, "url": f.url, "git_blob": f.git_blob, "sha256": f.sha256,
                     "pinned_revision": key not in mismatched, "local_copy": str(path)})
    write_json_atomic(out / "sources.json", {"licence": licence, "files": rows})


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
