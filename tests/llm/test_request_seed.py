"""fidelity.request_seed: the released code sends no seed; ours sends llm.seed. The switch reaches
every request body the stages send (reader, sieve, decomposition, query NER, judge) and the plan."""
from __future__ import annotations

from atomicrag.core.compose import load_config
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.sampling import request_seed, sampling


def test_sampling_drops_the_seed_only_under_the_released_switch() -> None:
    sent = load_config({"llm": "fake"})
    none = load_config({"llm": "fake", "fidelity": {"request_seed": "none"}})
    assert sampling(sent.llm, 64, sent.fidelity)["seed"] == sent.llm.seed == 0
    assert sampling(none.llm, 64, none.fidelity)["seed"] is None
    assert request_seed(7, none.fidelity) is None and request_seed(7, sent.fidelity) == 7


def test_reference_code_sends_no_seed_in_any_request() -> None:
    """A query through the library under the released switch: no request carries a seed."""
    from atomicrag import AtomicRAG

    seen: list[object] = []

    class Recording(FakeLLM):
        def chat(self, requests, **kw):
            seen.extend(r.seed for r in requests)
            return super().chat(requests, **kw)

    for switch, expect in (("none", {None}), ("sent", {0})):
        seen.clear()
        rag = AtomicRAG({"embedder": "fake", "reader": {"name": "precise"}, "sieve": {"name": "llm"},
                         "decompose": {"name": "llm"}, "fidelity": {"request_seed": switch}},
                        llm=Recording(), progress=False)
        rag.index(["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."])
        rag.query("Where was Marie Curie born?")
        rag.close()
        assert seen and set(seen) == expect, switch


def test_the_published_rows_send_no_seed_and_say_so() -> None:
    from atomicrag.core.config import to_dataclass
    from atomicrag.harness.differences import differences
    from atomicrag.harness.experiments import compose_experiment

    cfg = to_dataclass(compose_experiment("table2/medical_full", []))
    assert cfg.fidelity.request_seed == "none"
    assert "seed" not in [d["topic"] for d in differences(cfg)]
    own = to_dataclass(compose_experiment(None, []))
    assert "seed" in [d["topic"] for d in differences(own)]
