"""What is this OpenAI-compatible server, which structured-output dialect does it honour,
how long a prompt fits, and does it serve the model we will name?

Servers answer a wrong dialect differently, and some silently (docs/harness.md, "Running with a
GPU and vLLM"): vLLM 0.32 ignores its old guided-decoding extra field and ``{"type": "json_object", "schema": ...}``
with HTTP 200 and unconstrained text; llama-cpp-python's server knows only ``json_object`` +
schema. So the client asks the server what it is before the first request:

============================  ====================================  ===============
server                        recognised by                         dialect
============================  ====================================  ===============
vLLM                          ``owned_by: vllm`` or ``GET /version``  ``json_schema``
llama.cpp ``llama-server``    ``owned_by: llamacpp``                ``json_schema``
llama-cpp-python              ``owned_by: me``                      ``json_object``
anything else (OpenAI, ...)   --                                    ``json_schema``
============================  ====================================  ===============
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

STYLE_OF_KIND = {"vllm": "json_schema", "llama.cpp": "json_schema", "llama-cpp-python": "json_object",
                 "openai-compatible": "json_schema"}
LOCAL_KINDS = ("vllm", "llama.cpp", "llama-cpp-python")


class ModelNotServedError(RuntimeError):
    """The server answers but does not serve the configured model id (every call would 404)."""


@dataclass
class ServerInfo:
    base_url: str
    kind: str  # vllm | llama.cpp | llama-cpp-python | openai-compatible
    models: list[str] = field(default_factory=list)
    context_window: int | None = None  # tokens (prompt + completion) the server accepts, when it says
    version: str | None = None

    @property
    def response_format_style(self) -> str:
        return STYLE_OF_KIND[self.kind]


def _root(base_url: str) -> str:
    """``http://h:p/v1`` → ``http://h:p`` (vLLM's /version and llama.cpp's /props live there)."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _get_json(client: httpx.Client, url: str) -> Any:
    try:
        resp = client.get(url)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def probe_server(base_url: str, *, headers: dict[str, str] | None = None, timeout_s: float = 10.0) -> ServerInfo:
    """Ask the server at ``base_url`` (ending in /v1) what it is; raises when /models fails."""
    with httpx.Client(timeout=timeout_s, headers=headers) as client:
        resp = client.get(f"{base_url}/models")
        resp.raise_for_status()
        entries = [m for m in (resp.json().get("data") or []) if isinstance(m, dict)]
        owners = {str(m.get("owned_by", "")).lower() for m in entries}
        info = ServerInfo(base_url=base_url, kind="openai-compatible",
                          models=[str(m.get("id", "")) for m in entries])
        if "vllm" in owners:
            info.kind = "vllm"
        elif "llamacpp" in owners:
            info.kind = "llama.cpp"
        elif owners == {"me"}:
            info.kind = "llama-cpp-python"
        if info.kind in ("vllm", "openai-compatible"):
            version = _get_json(client, f"{_root(base_url)}/version")
            if isinstance(version, dict) and "version" in version:
                info.kind, info.version = "vllm", str(version["version"])
        lengths = [int(m["max_model_len"]) for m in entries if isinstance(m.get("max_model_len"), int)]
        if lengths:
            info.context_window = min(lengths)
        elif info.kind == "llama.cpp":
            props = _get_json(client, f"{_root(base_url)}/props") or {}
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
            info.context_window = int(n_ctx) if n_ctx else None
    return info


def check_model_served(info: ServerInfo, model: str) -> None:
    """Raise ``ModelNotServedError`` naming the served ids when ``model`` is not among them."""
    if model in info.models:
        return
    raise ModelNotServedError(
        f"{info.kind} server at {info.base_url} does not serve model {model!r}; it serves "
        f"{', '.join(repr(m) for m in info.models) or 'nothing'}. Set llm.model to one of these "
        "(for vLLM: the --served-model-name it was started with)"
    )
