"""A synthetic checkout of the released code: the same file and variable names and the same
expression forms (chat lists, f-strings, ``.format`` calls, ``Template(...)``, a sibling import,
``convert_format_to_template``, a join over examples inside a function), with invented texts.
The real texts never appear in this project."""
from __future__ import annotations

from pathlib import Path

TEMPLATES = {
    "ner.py": '''
ner_system = "SYN-NER-SYSTEM lists entities.\\n"
one_shot_ner_paragraph = "SYN paragraph about Oslo."
one_shot_ner_output = '{"named_entities": ["Oslo"]}'
prompt_template = [
    {"role": "system", "content": ner_system},
    {"role": "user", "content": one_shot_ner_paragraph},
    {"role": "assistant", "content": one_shot_ner_output},
    {"role": "user", "content": "${passage}"},
]
''',
    "unified_triple_knowledge_fragment_extraction.py": '''
from .ner import one_shot_ner_paragraph, one_shot_ner_output
from ...utils.llm_utils import convert_format_to_template

unified_extraction_system = "SYN-EXTRACT-SYSTEM " + "writes triples and fragments."
unified_extraction_frame = "SYN-FRAME passage:\\n{passage}\\n\\n{named_entity_json}\\n"
unified_extraction_input = unified_extraction_frame.format(
    passage=one_shot_ner_paragraph, named_entity_json=one_shot_ner_output)
unified_extraction_output = '{"triples": [], "knowledge_fragments": ["Oslo is a city."], "fragment_entities": [["Oslo"]]}'
prompt_template = [
    {"role": "system", "content": unified_extraction_system},
    {"role": "user", "content": unified_extraction_input},
    {"role": "assistant", "content": unified_extraction_output},
    {"role": "user", "content": convert_format_to_template(original_string=unified_extraction_frame,
                                                          placeholder_mapping=None, static_values=None)},
]
''',
    "question_analysis.py": '''
from string import Template

prompt_template = Template("SYN-ANALYSIS at most ${max_sub_questions} parts of: ${question} costs $$5")
''',
    "rag_qa_precise.py": '''
one_shot_rag_qa_docs = "Wikipedia Title: SYN doc one\\n\\nWikipedia Title: SYN doc two"
rag_qa_system = "SYN-PRECISE-SYSTEM answers shortly."
one_shot_rag_qa_input = f"{one_shot_rag_qa_docs}\\n\\nQuestion: SYN question?\\nThought: "
one_shot_rag_qa_output = "SYN thought. \\nAnswer: SYN."
prompt_template = [
    {"role": "system", "content": rag_qa_system},
    {"role": "user", "content": one_shot_rag_qa_input},
    {"role": "assistant", "content": one_shot_rag_qa_output},
    {"role": "user", "content": "${prompt_user}"},
]
''',
    "knowledge_fragment_extraction.py": '''
def get_prompt_template():
    return []

prompt_template = get_prompt_template()
''',
}
TEMPLATES["rag_qa_abstract.py"] = TEMPLATES["rag_qa_precise.py"].replace("SYN-PRECISE", "SYN-ABSTRACT")

JUDGE = '''
import json

STATEMENT_GENERATOR_PROMPT = """
SYN-STATEMENTS split {answer} for {question} into a JSON list.
"""
CORRECTNESS_PROMPT_TEMPLATE = """
SYN-CORRECTNESS {examples}
question: {question} answer: {answer} truth: {ground_truth}
"""
CORRECTNESS_EXAMPLES = [
    {"input": {"question": "SYN q?", "answer": ["SYN a"], "ground_truth": ["SYN g"]},
     "output": {"TP": [], "FP": [], "FN": []}},
    {"input": {"question": "SYN q2?", "answer": [], "ground_truth": []}, "output": {"TP": []}},
]


async def calculate_factuality(llm, question, answer_stmts, gt_stmts):
    examples = "\\n".join(
        f"In: {json.dumps(ex['input'])}\\nOut: {json.dumps(ex['output'])}"
        for ex in CORRECTNESS_EXAMPLES
    )
    return examples
'''


LINKING = '''
def get_query_instruction(linking_method):
    instructions = {
        "ner_to_node": "SYN-NER-TO-NODE: ",
        "query_to_node": "SYN-QUERY-TO-NODE: ",
        "query_to_passage": "SYN-QUERY-TO-PASSAGE: ",
    }
    default_instruction = "SYN-DEFAULT: "
    return instructions.get(linking_method, default_instruction)
'''


# the sieve: its prompt pieces live inside a class (attributes set in __init__, locals of the
# method that assembles the messages, the budget set in the calling method)
FRAGMENT_FILTER = '''
import json


class FragmentFilter:
    def __init__(self, rag_system):
        self.default_gen_kwargs = {}
        self.input_template = (
            "SYN-Q {question}\\n"
            "SYN-F {fragments_before_filter}"
        )
        self.output_template = "[[ ## kept_fragment_ids ## ]]\\n{kept_fragment_ids}"
        self.message_template = self._make_template()

    def _make_template(self):
        system_prompt = """SYN-SIEVE-SYSTEM keeps {question} fragments."""
        message_template = [{"role": "system", "content": system_prompt}]
        examples = [
            {
                "question": "SYN where?",
                "fragments_before_filter": json.dumps({"fragments": [{"id": 0, "text": "SYN a"}]}),
                "kept_fragment_ids": json.dumps({"keep_indices": [0]}),
            },
        ]
        for example in examples:
            message_template.append({"role": "user", "content": self.input_template.format(**example)})
        return message_template

    async def _llm_call_async(self, question, fragments):
        gen_kwargs = dict(self.default_gen_kwargs)
        gen_kwargs['max_completion_tokens'] = 77
        return ""
'''


def make_tree(root: Path) -> Path:
    tdir = root / "atomicrag" / "prompts" / "templates"
    tdir.mkdir(parents=True)
    (tdir / "__init__.py").write_text("")
    for name, text in TEMPLATES.items():
        (tdir / name).write_text(text)
    jdir = root / "Evaluation" / "metrics"
    jdir.mkdir(parents=True)
    (jdir / "answer_accuracy.py").write_text(JUDGE)
    (root / "atomicrag" / "prompts" / "linking.py").write_text(LINKING)
    (root / "atomicrag" / "fragment_filter.py").write_text(FRAGMENT_FILTER)
    return root
