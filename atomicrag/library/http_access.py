"""Who may ask the index server what: the checks ``http_server`` runs on every request before it
reads a body, each failure an HTTP status with a JSON error (``HTTPError``).

- **Host**: a browser page on another site can reach a loopback server through DNS rebinding (its
  own name, re-pointed at 127.0.0.1); the ``Host`` header still carries that name. Only loopback
  names, the address the server listens on and ``allowed_hosts`` are answered (421 otherwise).
  A server on a wildcard address (0.0.0.0, ::) has a token (required) and answers any name.
- **Origin**: a browser sends it with every cross-site POST; one that is neither the server's own
  origin nor in ``cors_origins`` is refused (403), so a page the user opens cannot delete or
  plant documents. Allowed CORS origins get ``Access-Control-Allow-*`` headers and preflights.
- **Token**: with ``api_key`` set, every route but the page itself (``GET /``, static text that
  holds no data) and CORS preflights needs ``Authorization: Bearer <key>`` (401). A non-loopback
  ``host`` without a key is refused at start (``check_bind``).
- **Content-Type**: a POST must be ``application/json`` (415): the "simple" types a page can send
  without a preflight (text/plain, form encodings) are never accepted.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

API_KEY_ENV = "ATOMICRAG_API_KEY"  # where `serve --index` and the client read the token
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


class HTTPError(ValueError):
    """A request the server refuses: its status, message, and the OpenAI error fields (``type``,
    ``param``: the body field at fault, ``code``: a stable word for programs)."""

    TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
             404: "not_found_error", 405: "invalid_request_error", 408: "invalid_request_error",
             411: "invalid_request_error", 413: "invalid_request_error", 415: "invalid_request_error",
             421: "permission_error", 502: "server_error", 503: "server_error"}

    def __init__(self, message: str, status: int = 400, *, param: str | None = None,
                 code: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code
        self.headers = dict(headers or {})

    def payload(self) -> dict[str, Any]:
        """The OpenAI error shape, which the OpenAI SDKs read their exception's message from."""
        return error_payload(str(self), self.status, param=self.param, code=self.code)


def error_payload(message: str, status: int, *, param: str | None = None,
                  code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": HTTPError.TYPES.get(status, "server_error"),
                      "param": param, "code": code}}


def is_loopback(host: str) -> bool:
    """``host`` (a name or an address, IPv6 possibly in brackets) names this machine only."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> str:
    """The name of a ``Host`` header (``name:port``, ``[v6]:port``), lower case, without the port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def api_key_from_env(env: str = API_KEY_ENV) -> str | None:
    key = os.environ.get(env, "").strip()
    return key or None


def check_bind(host: str, api_key: str | None) -> None:
    """A server reachable from other machines needs a token: refuse to start otherwise."""
    if not api_key and not is_loopback(host):
        raise ValueError(f"--host {host or '0.0.0.0'} makes the index server reachable from other machines, "
                         f"and it has no token: set {API_KEY_ENV} (clients send it as "
                         "'Authorization: Bearer <key>'), or listen on 127.0.0.1")


@dataclass
class AccessPolicy:
    """What a request must show: ``check_*`` raise ``HTTPError``; see the module docstring."""

    bind_host: str = "127.0.0.1"
    api_key: str | None = None
    cors_origins: frozenset[str] = field(default_factory=frozenset)
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def build(cls, bind_host: str, api_key: str | None = None, cors_origins: Iterable[str] = (),
              allowed_hosts: Iterable[str] = ()) -> AccessPolicy:
        origins = frozenset(o.strip().rstrip("/").lower() for o in cors_origins if o.strip())
        for o in origins:
            if o == "*" or "://" not in o:
                raise ValueError(f"--cors-origin {o!r}: expected an origin like https://app.example.org "
                                 "(scheme, host, optional port; '*' is not allowed)")
        return cls(bind_host, api_key or None, origins, frozenset(split_host(h) for h in allowed_hosts))

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:  # HTTP/1.0 clients may omit it; a browser always sends one
            return True
        name = split_host(host_header)
        if is_loopback(name) or name in self.allowed_hosts or name == self.bind_host.strip("[]").lower():
            return True
        return self.api_key is not None and self.bind_host in WILDCARD_HOSTS

    def check_host(self, headers: Mapping[str, str]) -> None:
        if not self.host_allowed(headers.get("Host")):
            raise HTTPError(f"Host {headers.get('Host')!r} is not a name of this server (a DNS-rebinding "
                            "page would send one like it); allowed: loopback names"
                            + (", " + ", ".join(sorted(self.allowed_hosts)) if self.allowed_hosts else ""),
                            421, code="host_not_allowed")

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self.cors_origins:
            return True
        # the server's own page: its origin is the Host the browser asked for (https behind a TLS
        # proxy), and a Host that reached this point is one of the server's own names
        host = (host_header or "").strip().lower()
        return bool(host) and origin in (f"http://{host}", f"https://{host}")

    def check_origin(self, headers: Mapping[str, str]) -> str | None:
        """The request's ``Origin`` when it is a CORS origin to answer (None: same-origin or none)."""
        origin = headers.get("Origin")
        if origin is None:
            return None  # not sent by a browser's cross-site request (curl, SDKs)
        if not self.origin_allowed(origin, headers.get("Host")):
            raise HTTPError(f"Origin {origin!r} may not use this server; start it with --cors-origin "
                            f"{origin} to allow that site", 403, code="origin_not_allowed")
        return origin if origin.strip().rstrip("/").lower() in self.cors_origins else None

    def check_token(self, headers: Mapping[str, str]) -> None:
        if self.api_key is None:
            return
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.api_key.encode()):
            raise HTTPError(f"this server needs 'Authorization: Bearer <key>' (the key in its {API_KEY_ENV})",
                            401, code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})

    @staticmethod
    def check_json(headers: Mapping[str, str]) -> None:
        media = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise HTTPError(f"a POST body must be sent as Content-Type: application/json, not {media or 'none'!r}",
                            415, code="unsupported_media_type")


def cors_headers(origin: str | None) -> dict[str, str]:
    """Headers that let an allowed cross-site page read the reply (none for same-origin requests)."""
    if origin is None:
        return {}
    return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
            "Access-Control-Allow-Headers": "Authorization, Content-Type", "Access-Control-Max-Age": "600"}
