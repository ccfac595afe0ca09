"""A scripted model: replies chosen, not sampled, served over HTTP by ``scripted_server.py``.

Parity runs (``scripts/parity_released.py --llm scripted``) put it behind the recording proxy, where
the released code and our ``fidelity=reference_code`` row both call it. A small real model takes the
same few paths every time (no question decomposed, every fragment kept by the sieve); this model
takes every path on purpose, so a difference between the two pipelines in any branch shows:

- NER: plain names, names with non-ASCII letters, names with no ASCII letter at all, duplicates,
  an empty reply;
- extraction: well-formed, malformed triples (two or four items, non-string items), a fragment
  shared with the previous document, more entity lists than fragments (with non-ASCII names, as
  written and in the released key form), fewer entity lists than fragments,
  repeated triples with empty and blank fragments ahead of their entity lists, a short alias of a
  long name (a synonym edge), an empty reply; entity lists are written in the released key form
  (``entity_key``) so that they link fragments to entity nodes, except where a branch says not;
- decomposition: a false flag with a high score (and sub-questions), two sub-questions at exactly
  the threshold score, three with a non-ASCII name, an empty list, duplicates, more than the cap, a
  bare string ahead of more objects than the cap, a flag that contradicts a low score, a fenced
  reply, an unreadable reply;
- sieve: ids out of order, most dropped, invalid ids, out-of-range ids, repeated ids, a boolean id,
  no reply section, nothing kept, a Python-literal reply, an empty reply, and a readable reply that
  arrives after the sieve's timeout (``late_delay_s``: the server holds it that long; a pipeline
  that honours the timeout keeps every candidate, one that waits keeps one);
- reader: zero, one and two ``Answer:`` markers, JSON after the marker, no marker with newlines
  around the reply, an empty reply; the answer is a name from the retrieved passages;
- judge: statements and classifications with true and false positives and negatives, all true,
  fenced JSON, a classification readable only when asked again, or only the third time, an answer
  with no statements (the model counts how often it was asked the same messages).

A reply is chosen by what the request asks: its stage (``stage_rules``: regular expressions on the
first message, built by the caller, e.g. from a checkout's templates at run time), and its subject:
which document or which question (or sub-question) its last message carries. The branch of each
subject is fixed by its position in the slice, so the choice does not depend on the order in
which requests arrive. Every reply names its stage, branch and subject in ``system_fingerprint``
(``scripted:<stage>:<branch>:<subject>``), which the recording keeps: the parity report counts the
branches from it. All reply text is written here from the request's own content.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atomicrag.llm.request_keys import classify_stage, compile_rules

MODEL_NAME = "scripted"

NER_BRANCHES = ("ner_plain", "ner_non_ascii", "ner_no_ascii_letter", "ner_duplicates", "ner_empty_reply")
# by document position; extract_shared_sentence follows extract_plain so that the sentence it
# borrows from the previous document is one of that document's fragments too
EXTRACTION_BRANCHES = ("extract_plain", "extract_shared_sentence", "extract_malformed_triples",
                       "extract_surplus_lists", "extract_empty_reply", "extract_missing_lists",
                       "extract_duplicates_empty_fragments", "extract_alias")
# ten, so that the two slices (20 and 12 questions) give each at least three questions
DECOMPOSE_BRANCHES = ("decompose_flag_false_high_score", "decompose_two", "decompose_three_non_ascii",
                      "decompose_empty_list", "decompose_duplicates", "decompose_over_cap",
                      "decompose_flag_below_threshold", "decompose_fenced", "decompose_unreadable",
                      "decompose_non_object_over_cap")
SIEVE_BRANCHES = ("sieve_out_of_order", "sieve_drop_most", "sieve_invalid_ids", "sieve_out_of_range",
                  "sieve_no_section", "sieve_keep_none", "sieve_python_literal", "sieve_empty_reply",
                  "sieve_repeats", "sieve_bool_ids", "sieve_late")
READER_BRANCHES = ("reader_one_marker", "reader_two_markers", "reader_no_marker", "reader_empty_reply",
                   "reader_json_one_line", "reader_no_marker_newlines")
# the judge, per question: statements and a classification with true and false positives and
# negatives | every answer statement supported | fenced replies (the statement reading takes them,
# the released classification reading does not) | a classification unreadable when first asked and
# readable when asked again | an answer that splits into no statements
# | a classification readable only when asked the third time (the released judge's last try)
JUDGE_BRANCHES = ("judge_tp_fp_fn", "judge_all_tp", "judge_fenced", "judge_retry_then_readable",
                  "judge_no_statements", "judge_third_asking")
BRANCHES = {"ner": NER_BRANCHES, "query_ner": NER_BRANCHES, "extraction": EXTRACTION_BRANCHES,
            "decompose": DECOMPOSE_BRANCHES, "sieve": SIEVE_BRANCHES, "reader": READER_BRANCHES,
            "judge_statements": JUDGE_BRANCHES, "judge_classify": JUDGE_BRANCHES}

# name-like spans: capitalised words in a row (a cased corpus), e.g. "Marie Curie", "Blood Street"
_NAME = re.compile(r"\b[A-Z][\w'\-]*(?:\s+(?:of\s+|de\s+)?[A-Z][\w'\-]*)*")
_WORD = re.compile(r"[^\W\d_]{4,}")


def names_in(text: str, limit: int = 5) -> list[str]:
    """Up to ``limit`` distinct name-like spans of ``text``; its longest words where it has none
    (a lowercased corpus)."""
    out: list[str] = []
    for m in _NAME.finditer(text):
        if m.group(0) not in out:
            out.append(m.group(0))
    if not out:
        out = sorted(dict.fromkeys(_WORD.findall(text)), key=lambda w: (-len(w), w))
    return out[:limit]


def sentences_of(text: str) -> list[str]:
    parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    return parts or [text.strip()]


# names with letters outside ASCII, written here: the released entity key keeps only ASCII letters,
# digits and spaces, so these test how each pipeline keys, links and embeds them
NON_ASCII_NAMES = ("Zoë Sørensen", "São Tomé")
# short forms that an embedder puts next to their long form (cosine above the released synonym
# threshold with MiniLM), each of no more than 3 letters (3 and 2): the released synonym search takes a
# node of 3 alphanumerics or fewer as a neighbour but never as a source
ALIASES = (("United States", "USA"), ("Connecticut", "CT"))
# labels a reader's context puts before its passages ("Wikipedia Title: ..."), not names
_LABEL = re.compile(r"^\s*(?:\[\d+\]\s*)?(?:Wikipedia Title|Title|Passage|Context|Document|Fragment|Source|"
                    r"Question|Thought|Answer)\s*\d*\s*:\s*", re.IGNORECASE | re.MULTILINE)


def entity_key(name: str) -> str:
    """A name as the released graph keys its entity nodes: lower-cased, every character but an ASCII
    letter, digit or space turned into a space, the ends stripped. A fragment's entity list written
    in this form links its fragment to the node; any other form is looked up as it is and links
    nothing, in the released code and in ours under ``containment_keys=raw``."""
    return re.sub(r"[^a-z0-9 ]", " ", name.lower()).strip()


def sub_questions(question: str, n: int) -> list[str]:
    """``n`` sub-questions about the names of ``question`` (a fixed wording, written here)."""
    names = names_in(question, limit=n) or ["the subject"]
    forms = ("Who or what is {}?", "What is known about {}?", "Where is {} from?", "When did {} happen?",
             "Which facts mention {}?")
    return [forms[k % len(forms)].format(names[k % len(names)]) for k in range(n)]


@dataclass(frozen=True)
class Reply:
    text: str
    stage: str
    branch: str
    subject: str
    delay_s: float = 0.0  # how long the server holds the reply before sending it (a late reply)

    @property
    def fingerprint(self) -> str:
        return f"scripted:{self.stage}:{self.branch}:{self.subject}"


class ScriptedModel:
    """The replies of the scripted model for one slice: its documents and questions."""

    def __init__(self, docs: Sequence[str], questions: Sequence[str], stage_rules: dict[str, str] | None,
                 *, max_sub_questions: int = 3, references: Sequence[str] = (), late_delay_s: float = 0.0) -> None:
        self.docs = list(docs)
        # sieve_late's hold: longer than the sieve timeout of the run, so that its reply comes too late
        self.late_delay_s = late_delay_s
        self.questions = list(questions)
        self.references = list(references)  # the judge's ground truths, by question
        self._lock = threading.Lock()
        self._asked: dict[str, int] = {}  # messages digest -> times asked (a judge asks again)
        self._statements: dict[tuple[int, str], list[str]] = {}  # (question, role) -> statements written
        self.rules = compile_rules(stage_rules or {})
        self.max_sub = max_sub_questions
        # every query a pipeline may ask about: the questions, then the sub-questions this model
        # writes for them (all of them, whatever a pipeline keeps), each with a fixed position
        self.queries: list[str] = []
        for i, q in enumerate(self.questions):
            self.queries.append(q)
            for sq in self._decomposition(i)[1]:
                if isinstance(sq, str) and sq not in self.queries:
                    self.queries.append(sq)

    # -- subjects ---------------------------------------------------------------------------------
    def _doc(self, text: str) -> int | None:
        hits = [i for i, d in enumerate(self.docs) if d and d in text]
        return max(hits, key=lambda i: len(self.docs[i])) if hits else None

    def _query(self, text: str) -> int | None:
        stripped = [q.strip() for q in self.queries]
        hits = [i for i, q in enumerate(stripped) if q and q in text]
        return max(hits, key=lambda i: (len(stripped[i]), -i)) if hits else None

    # -- replies ----------------------------------------------------------------------------------
    def reply(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        last = str(messages[-1].get("content") or "") if messages else ""
        stage = classify_stage(body, self.rules)
        if stage in ("ner", "query_ner"):
            doc = self._doc(last)
            if doc is not None:
                return self._ner(stage, last, doc, f"doc:{doc}")
            q = self._query(last)
            return self._ner(stage, last, q or 0, f"query:{q}")
        if stage == "extraction":
            doc = self._doc(last)
            return self._extraction(self.docs[doc] if doc is not None else last, doc or 0, f"doc:{doc}")
        if stage == "decompose":
            q = self._query(last)
            qi = q if q is not None and q < len(self.queries) and self.queries[q] in self.questions else None
            i = self.questions.index(self.queries[qi]) if qi is not None else 0
            branch, subs, text = self._decomposition(i)
            return Reply(text, stage, branch, f"question:{i}")
        if stage == "sieve":
            return self._sieve(last)
        if stage == "reader":
            return self._reader(last)
        if stage in ("judge_statements", "judge_classify"):
            q = self._query(last)
            qi = self.questions.index(self.queries[q]) if q is not None and self.queries[q] in self.questions else 0
            digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
            with self._lock:
                asked = self._asked.get(digest, 0)
                self._asked[digest] = asked + 1
            if stage == "judge_statements":
                return self._judge_statements(last, qi)
            return self._judge_classify(qi, asked)
        return Reply("", stage, "unscripted", "none")

    def _judge_statements(self, last: str, qi: int) -> Reply:
        branch = judge_branch(qi)
        ref = self.references[qi] if qi < len(self.references) else ""
        # the text to split: after the question's "Answer:" label, up to the blank line before the
        # prompt's last line (an answer may itself hold blank lines)
        after = last[last.rfind(self.questions[qi].strip()) + len(self.questions[qi].strip()):]
        m = re.search(r"Answer:[ \t]*(.*)\n\s*\n[^\n]*\s*$", after, re.DOTALL)
        text = m.group(1).strip() if m else ""
        role = ("reference" if ref.strip() and (text == ref.strip() or (len(text) >= 40 and ref.strip().startswith(text)))
                else "answer")
        text = ref if role == "reference" else text
        statements = [] if (branch == "judge_no_statements" and role == "answer") or not text.strip() else \
            sentences_of(text)[:4]
        with self._lock:
            self._statements[(qi, role)] = statements
        body = json.dumps(statements, ensure_ascii=False)
        if branch == "judge_fenced":
            body = "```json\n" + json.dumps({"statements": statements}, ensure_ascii=False) + "\n```"
        return Reply(body, "judge_statements", branch, f"question:{qi}")

    def _judge_classify(self, qi: int, asked: int) -> Reply:
        branch = judge_branch(qi)
        subject = f"question:{qi}"
        unreadable = {"judge_retry_then_readable": 1, "judge_third_asking": 2}.get(branch, 0)
        if asked < unreadable:  # prose where JSON is asked for: a judge that reads it must ask again
            return Reply(f"Most of the statements seem right to me ({asked + 1}).", "judge_classify", branch, subject)
        with self._lock:
            answer = list(self._statements.get((qi, "answer"), []))
            reference = list(self._statements.get((qi, "reference"), []))

        def words(t: str) -> set[str]:
            return {w.lower() for w in _WORD.findall(t)}

        ref_words = set().union(*(words(r) for r in reference)) if reference else set()
        ans_words = set().union(*(words(a) for a in answer)) if answer else set()
        if branch == "judge_all_tp":
            tp, fp, fn = answer, [], []
        else:
            tp = [a for a in answer if words(a) & ref_words]
            fp = [a for a in answer if not words(a) & ref_words]
            fn = [r for r in reference if not words(r) & ans_words]
        obj = {key: [{"statement": x, "reason": reason} for x in items] for key, items, reason in (
            ("TP", tp, "shares a word with the reference"), ("FP", fp, "shares no word with the reference"),
            ("FN", fn, "shares no word with the answer"))}
        text = json.dumps(obj, ensure_ascii=False)
        if branch == "judge_fenced":
            text = f"```json\n{text}\n```"
        return Reply(text, "judge_classify", branch, subject)

    def _ner(self, stage: str, text: str, position: int, subject: str) -> Reply:
        branch = NER_BRANCHES[position % len(NER_BRANCHES)]
        names = names_in(text.split(":", 1)[-1])
        if branch == "ner_empty_reply":
            return Reply("", stage, branch, subject)
        if branch == "ner_non_ascii":
            names = names + [f"{names[0]} Łódź" if names else "Łódź", "Zoë Åström"]
        elif branch == "ner_no_ascii_letter":
            names = names + ["東京", "— ·"]
        elif branch == "ner_duplicates":
            names = names + names[:2] + [n.upper() for n in names[:1]]
        return Reply(json.dumps({"named_entities": names}, ensure_ascii=False), stage, branch, subject)

    def _extraction(self, doc: str, position: int, subject: str) -> Reply:
        branch = EXTRACTION_BRANCHES[position % len(EXTRACTION_BRANCHES)]
        if branch == "extract_empty_reply":
            return Reply("", "extraction", branch, subject)
        body = doc.split(":", 1)[-1]
        names = names_in(body, limit=6)
        triples: list[list[Any]] = [[a, "appears with", b] for a, b in zip(names, names[1:])]
        fragments: list[str] = sentences_of(body)[:6]
        # each fragment's names in the released key form, so that its entity list links it to nodes
        entities: list[list[str]] = [[entity_key(n) for n in names if n in f] for f in fragments]
        if branch == "extract_malformed_triples":
            head = names[0] if names else "it"
            triples += [[head, "has"], [head, "is", "a", "thing"], [head, 1921, None], ["", "", ""]]
            entities = [[n for n in names if n in f] for f in fragments]  # as written: these link nothing
        elif branch == "extract_shared_sentence":
            # the first sentence of the previous document, with this document's names: one node in the
            # released graph (a fragment is keyed by its text), linked to the names of both
            prev = self.docs[position - 1].split(":", 1)[-1] if position > 0 else body
            fragments.append(sentences_of(prev)[0])
            entities.append([entity_key(n) for n in names[:2]])
        elif branch == "extract_surplus_lists":
            # a non-ASCII name as written and in its key form, then two entity lists more than
            # there are fragments (the released reading cuts them)
            odd = NON_ASCII_NAMES[position % len(NON_ASCII_NAMES)]
            triples.append([names[0] if names else "it", "met", odd])
            if entities:
                entities[0] = entities[0] + [odd, odd.lower()]  # as written: link nothing once keyed raw
                entities[-1] = entities[-1] + [entity_key(odd)]  # the key form links the node
            entities += [[entity_key(names[0])] if names else [], [odd]]
        elif branch == "extract_missing_lists":
            entities = entities[: len(fragments) // 2]  # the rest of the fragments get none
        elif branch == "extract_duplicates_empty_fragments":
            # the same triple twice, and once more in another case (one edge weight of 2 once keyed);
            # an empty and a blank fragment in second place, whose entity lists stay where they were
            if triples:
                triples += [list(triples[0]), [x.upper() if isinstance(x, str) else x for x in triples[0]]]
            fragments[1:1] = ["", "   "]
            entities[1:1] = [[entity_key(names[-1])] if names else [], []]
        elif branch == "extract_alias":
            # a long name and its short form, each with a different partner: a synonym edge between
            # them, not a triple
            head = names[0] if names else "it"
            tail = names[-1] if names else "it"
            for long_name, short in ALIASES:  # both: 3 and 2 alphanumerics, each side of the cut
                triples += [[head, "appears with", long_name], [short, "appears with", tail]]
                fragments.append(f"{long_name} ({short}) is named near {head}.")
                entities.append([entity_key(long_name), entity_key(short), entity_key(head)])
        reply = {"triples": triples, "knowledge_fragments": fragments, "fragment_entities": entities}
        return Reply(json.dumps(reply, ensure_ascii=False), "extraction", branch, subject)

    def _decomposition(self, i: int) -> tuple[str, list[Any], str]:
        """(branch, the sub-questions written, the reply) for question ``i``."""
        branch = DECOMPOSE_BRANCHES[i % len(DECOMPOSE_BRANCHES)]
        q = self.questions[i]
        subs: list[Any] = []
        score, needs = 8.0, True
        if branch == "decompose_flag_false_high_score":  # the flag decides: not decomposed
            needs, subs = False, sub_questions(q, 2)
        elif branch == "decompose_two":
            score, subs = 6.5, sub_questions(q, 2)  # exactly the released threshold: decomposed
        elif branch == "decompose_three_non_ascii":  # one sub-question names a non-ASCII name
            subs = [*sub_questions(q, 2), f"Where did {NON_ASCII_NAMES[i % len(NON_ASCII_NAMES)]} live?"]
        elif branch == "decompose_fenced":
            subs = sub_questions(q, 3)
        elif branch == "decompose_duplicates":
            one = sub_questions(q, 2)
            subs = [one[0], one[1], one[0]]
        elif branch == "decompose_over_cap":
            subs = sub_questions(q, self.max_sub + 2)
        elif branch == "decompose_flag_below_threshold":
            score, subs = 5, sub_questions(q, 2)
        elif branch == "decompose_non_object_over_cap":
            # a bare string first: it takes one of the cap's places before it is dropped
            subs = [f"Is {(names_in(q, 1) or ['it'])[0]} named in the passages?", *sub_questions(q, self.max_sub + 1)]
        items = [s if isinstance(s, str) and k == 0 and branch == "decompose_non_object_over_cap"
                 else {"id": k + 1, "question": s, "focus": "entity"} for k, s in enumerate(subs)]
        reply = {"needs_decomposition": needs, "complexity_score": score,
                 "reasoning": f"{len(subs)} parts were written for this question.", "sub_questions": items}
        text = json.dumps(reply, ensure_ascii=False, indent=1)
        if branch == "decompose_fenced":
            text = f"Here is the analysis.\n```json\n{text}\n```\n"
        elif branch == "decompose_unreadable":
            text = "needs_decomposition: maybe; the parts are unclear"
        return branch, subs, text

    def _sieve(self, last: str) -> Reply:
        q = self._query(last)
        n = len(_fragments(last))
        # each pass through the branches starts one further on: queries come in runs (a question and its
        # sub-questions, some of which no pipeline asks), and a plain cycle of eleven left one branch
        # with two distinct requests over both scripted slices; shifted, each has at least three
        k, n_branches = q or 0, len(SIEVE_BRANCHES)
        branch = SIEVE_BRANCHES[(k + k // n_branches) % n_branches]
        subject = f"query:{q}"
        keep: Any
        if branch == "sieve_empty_reply":
            return Reply("", "sieve", branch, subject)
        if branch == "sieve_late":  # readable, keeps one: a pipeline that waits for it keeps less than all
            value = json.dumps({"keep_indices": [min(n - 1, 1)] if n else []})
            return Reply(f"[[ ## kept_fragment_ids ## ]]\n{value}\n\n[[ ## completed ## ]]", "sieve", branch,
                         subject, delay_s=self.late_delay_s)
        if branch == "sieve_out_of_order":
            keep = list(dict.fromkeys([min(n - 1, 4), 0, min(n - 1, 2), min(n - 1, 7)])) if n else []
        elif branch == "sieve_drop_most":
            keep = [min(n - 1, 1)] if n else []
        elif branch == "sieve_invalid_ids":
            keep = [0, "two", 3]
        elif branch == "sieve_out_of_range":
            keep = [1, n + 5, -1, 0]
        elif branch == "sieve_keep_none":
            keep = []
        elif branch == "sieve_repeats":
            keep = [min(n - 1, 2), 0, min(n - 1, 2)] if n else []
        elif branch == "sieve_bool_ids":
            keep = [True, min(n - 1, 2)] if n else [True]  # JSON true: a lax integer field reads 1
        else:
            keep = [k for k in range(n) if k % 3 == 0]
        if branch == "sieve_no_section":
            return Reply(json.dumps({"keep_indices": keep}), "sieve", branch, subject)
        value = (repr({"keep_indices": keep}) if branch == "sieve_python_literal"
                 else json.dumps({"keep_indices": keep}))
        return Reply(f"[[ ## kept_fragment_ids ## ]]\n{value}\n\n[[ ## completed ## ]]", "sieve", branch, subject)

    def _reader(self, last: str) -> Reply:
        q = self._query(last)
        qi = self.questions.index(self.queries[q]) if q is not None and self.queries[q] in self.questions else 0
        branch = READER_BRANCHES[qi % len(READER_BRANCHES)]
        subject = f"question:{qi}"
        names = context_names(last.rsplit("Question:", 1)[0], self.questions[qi])
        if branch == "reader_empty_reply":
            return Reply("", "reader", branch, subject)
        if branch == "reader_no_marker":
            text = f"The passages point to {names[0]}."
        elif branch == "reader_no_marker_newlines":
            text = f"\n\nThe passages point to {names[0]}.\n\n"
        elif branch == "reader_two_markers":
            text = f"{names[0]} is named first.\nAnswer: {names[0]}\nAnswer: {names[-1]}"
        elif branch == "reader_json_one_line":
            obj = json.dumps({"answer": names[0], "also": names[-1]}, ensure_ascii=False)
            text = f"Thought: the first passage names {names[0]}.\nAnswer: {obj}\nBoth names come from the passages."
        else:
            text = f"The first passage names {names[0]}.\nAnswer: {names[0]}"
        return Reply(text, "reader", branch, subject)


def judge_branch(qi: int) -> str:
    """The judge's branch of question ``qi``, one step off the reader's (both cycles have six): the
    question whose reader reply is empty is the one with no answer statements, and each branch that
    classifies gets an answer to classify."""
    return JUDGE_BRANCHES[(qi + 1) % len(JUDGE_BRANCHES)]


def context_names(context: str, question: str, limit: int = 2) -> list[str]:
    """Names from a reader context's passages, those not in the question first: what was retrieved
    decides the answer. Labels before a passage ("Wikipedia Title:", "[1] Passage:") are not names."""
    passages = _LABEL.sub("", context)
    names = names_in(passages, limit=20)
    fresh = [n for n in names if n.lower() not in question.lower()]
    return (fresh + [n for n in names if n not in fresh])[:limit] or ["no name"]


def _fragments(text: str) -> list[str]:
    """The fragments a sieve request lists (its ``{"fragments": [...]}`` object)."""
    at = text.rfind('{"fragments"')
    if at < 0:
        return []
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[at:])
    except json.JSONDecodeError:
        return []
    return [str(f) for f in obj.get("fragments") or []]
