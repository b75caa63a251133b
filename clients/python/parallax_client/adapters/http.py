"""Generic HTTP: an ``httpx.Client``/``AsyncClient`` or a ``requests.Session``
(anything with ``get``/``post``/.../``request(method, url, ...)``).

Each request is ``http.<method>`` (``http.get``, ``http.post``...) with
``recipient`` the URL (any user:password part removed), ``body`` the JSON,
text or form body, and ``metadata`` the query parameters and the names (not
the values) of the headers. Other attributes pass through. A rewrite
replaces the body where it came from (``json`` is parsed back when the
rewrite is still JSON, else sent as text).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Mapping

from ..adapter import Adapter, T
from ..toolcall import ToolCall

VERBS = ("get", "head", "options", "post", "put", "patch", "delete")
BODY_KEYS = ("json", "content", "data")


def _without_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _body_text(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if key == "json":
        return json.dumps(value, ensure_ascii=False, default=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return urllib.parse.urlencode({str(k): str(v) for k, v in value.items()})
    return None


class HttpAdapter(Adapter[T]):
    """``fw.wrap(HttpAdapter(httpx.Client()))``; ``name`` may be changed
    (``HttpAdapter(client, name="crm")`` makes ``crm.post`` calls)."""

    name = "http"
    methods = frozenset({*VERBS, "request"})

    def __init__(self, target: T, *, name: str | None = None) -> None:
        super().__init__(target)
        if name:
            self.name = name  # type: ignore[misc]

    def normalise(self, method: str, kwargs: dict[str, Any]) -> ToolCall:
        verb = str(kwargs.get("method", "")).lower() if method == "request" else method
        url = str(kwargs.get("url", ""))
        body = None
        for key in BODY_KEYS:
            if kwargs.get(key) is not None:
                body = _body_text(key, kwargs[key])
                break
        meta: dict[str, Any] = {}
        params = kwargs.get("params")
        if isinstance(params, Mapping):
            meta["params"] = {str(k): str(v) for k, v in params.items()}
        headers = kwargs.get("headers")
        if isinstance(headers, Mapping):
            meta["header_names"] = sorted(str(k).lower() for k in headers)
        return ToolCall(
            adapter=self.name,
            action=verb,
            recipient=_without_userinfo(url),
            body=body,
            metadata=meta,
            method=method,
            kwargs=kwargs,
        )

    def apply(self, call: ToolCall) -> dict[str, Any]:
        kwargs = dict(call.kwargs)
        original = self.normalise(call.sdk_method, kwargs)
        if call.body == original.body:
            return kwargs
        key = next((k for k in BODY_KEYS if kwargs.get(k) is not None), "content")
        if key == "json":
            try:
                kwargs["json"] = json.loads(call.body or "null")
                return kwargs
            except json.JSONDecodeError:
                del kwargs["json"]
                key = "content" if "content" in _params(self.target, call.sdk_method) else "data"
        kwargs[key] = call.body
        return kwargs


def _params(target: Any, method: str) -> set[str]:
    import inspect

    try:
        return set(inspect.signature(getattr(target, method)).parameters)
    except (TypeError, ValueError, AttributeError):
        return set()
