"""Run by ``test_released_render.py`` as ``python3 -I released_render_probe.py CHECKOUT INPUTS.json``.

It imports ONLY the released code's prompt files from CHECKOUT (never this project) and prints, as
JSON, what the released code itself renders for the sample inputs: every chat template through its
own ``PromptTemplateManager``, the two judge prompts through its own ``generate_statements`` /
``calculate_factuality`` (a stand-in LLM records the prompt), the sieve messages and budget
through its own ``FragmentFilter._llm_call_async``, and its linking instructions.

Third-party imports of those files that are not needed to build a prompt are stubbed in
``sys.modules`` (numpy, langchain_core, json5, json_repair, tqdm); pydantic is stubbed too when the
interpreter lacks it. The package ``__init__`` files of the checkout are skipped (they import the
whole pipeline); each released module is loaded from its file inside a bare package object.
"""
from __future__ import annotations

import asyncio
import json
import sys
import types
from pathlib import Path

ROOT = Path(sys.argv[1])
INPUTS = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))


def package(name: str, path: Path) -> None:
    mod = types.ModuleType(name)
    mod.__path__ = [str(path)]  # type: ignore[attr-defined]
    sys.modules[name] = mod


def stub(name: str, **attrs: object) -> None:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod


class _Any:
    def __init__(self, *a: object, **k: object) -> None:
        pass


stub("numpy", average=lambda *a, **k: 0.0, dot=lambda *a, **k: 0.0, array=lambda x: x)
stub("numpy.linalg", norm=lambda *a, **k: 1.0)
stub("langchain_core")
stub("langchain_core.language_models", BaseLanguageModel=_Any)
stub("langchain_core.embeddings", Embeddings=_Any)
stub("langchain_core.callbacks", Callbacks=object)
stub("langchain_core.callbacks.base", Callbacks=object)
stub("json5", loads=json.loads)
stub("json_repair", repair_json=lambda s: s)
stub("tqdm", tqdm=lambda it, **k: it)
try:
    import pydantic  # noqa: F401  (the released models are pydantic classes)
except ImportError:  # a bare interpreter: the prompt does not depend on validation
    class _Model:
        def __init__(self, **k: object) -> None:
            self.__dict__.update(k)
    stub("pydantic", BaseModel=_Model, Field=lambda *a, **k: None, TypeAdapter=_Any, ValidationError=Exception)

sys.path.insert(0, str(ROOT))  # for the top-level Evaluation package
package("atomicrag", ROOT / "atomicrag")
package("atomicrag.utils", ROOT / "atomicrag" / "utils")
package("atomicrag.prompts", ROOT / "atomicrag" / "prompts")
package("Evaluation", ROOT / "Evaluation")
package("Evaluation.metrics", ROOT / "Evaluation" / "metrics")

from atomicrag.prompts.prompt_template_manager import PromptTemplateManager  # noqa: E402

out: dict[str, object] = {}
manager = PromptTemplateManager(role_mapping={"system": "system", "user": "user", "assistant": "assistant"})
out["ner"] = manager.render(name="ner", passage=INPUTS["passage"])
out["extraction"] = manager.render(name="unified_triple_knowledge_fragment_extraction", passage=INPUTS["passage"],
                                   named_entity_json=json.dumps({"named_entities": INPUTS["entities"]}))
out["decomposition"] = manager.render(name="question_analysis", question=INPUTS["question"],
                                      question_type="Unknown", max_sub_questions=3)
for kind in ("precise", "abstract"):
    out[f"reader_{kind}"] = manager.render(name=f"rag_qa_{kind}", prompt_user=INPUTS["prompt_user"])

from atomicrag.prompts.linking import get_query_instruction  # noqa: E402

out["instructions"] = {k: get_query_instruction(k) for k in ("query_to_passage", "query_to_node")}


class Recorder:
    """The judge's LLM: records each prompt, replies with JSON the released parsers accept."""

    def __init__(self, reply: str) -> None:
        self.reply, self.prompts = reply, []

    async def ainvoke(self, prompt: str, config: object = None) -> object:
        self.prompts.append(prompt)
        return types.SimpleNamespace(content=self.reply)


from Evaluation.metrics import answer_accuracy as aa  # noqa: E402

rec = Recorder('{"statements": ["x"]}')
asyncio.run(aa.generate_statements(rec, INPUTS["question"], INPUTS["answer"], None))
out["judge_statements"] = rec.prompts[0]
rec = Recorder('{"TP": [], "FP": [], "FN": []}')
asyncio.run(aa.calculate_factuality(rec, INPUTS["question"], INPUTS["answer_statements"],
                                    INPUTS["reference_statements"], None, 1.0))
out["judge_classify"] = rec.prompts[0]

from atomicrag.fragment_filter import FragmentFilter  # noqa: E402


class SieveLLM:
    def __init__(self) -> None:
        self.calls = []

    async def ainfer(self, messages: list, model: str = "", **kwargs: object) -> tuple:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        return "", None, None


llm = SieveLLM()
system = types.SimpleNamespace(llm_model=llm, global_config=types.SimpleNamespace(llm_name="m", max_concurrency=1))
asyncio.run(FragmentFilter(system)._llm_call_async(INPUTS["question"], INPUTS["fragments"]))
out["sieve"] = llm.calls[0]["messages"]
out["sieve_max_tokens"] = llm.calls[0]["kwargs"].get("max_completion_tokens")
# how the released code reads replies: the sieve's parser (real pydantic only) and the decomposer
if "pydantic" in sys.modules and hasattr(sys.modules["pydantic"], "VERSION"):
    ff = FragmentFilter(system)
    out["sieve_parses"] = [ff._parse_response(r, INPUTS["sieve_n"]) for r in INPUTS["sieve_replies"]]

stub("atomicrag.llm", BaseLLM=object)
from atomicrag.query_decomposition import QueryDecomposer  # noqa: E402


class DecomposeLLM:
    reply = ""

    async def ainfer(self, messages: list, **kwargs: object) -> tuple:
        return self.reply, None, None


dllm = DecomposeLLM()
decomposer = QueryDecomposer(dllm, max_sub_questions=3, complexity_threshold=INPUTS["threshold"],
                             prompt_template_manager=manager)
out["decompositions"] = []
for reply in INPUTS["decompose_replies"]:
    dllm.reply = reply
    needs, score, _, subs = asyncio.run(decomposer.analyze_question_async(INPUTS["question"]))
    out["decompositions"].append([INPUTS["question"]] + ([s.question for s in subs] if needs and subs else []))
json.dump(out, sys.stdout, ensure_ascii=False)
