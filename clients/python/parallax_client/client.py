"""The sync and async clients of the HTTP API.

Both take the same settings and make the same calls; :class:`Parallax`
blocks (urllib), :class:`AsyncParallax` is awaited (asyncio). Neither needs
anything outside the standard library.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from typing import Any, Mapping

from ._checks import AsyncChecks, SyncChecks
from ._http import Config, request_async, request_sync
from .decision import Approval, Decision
from .errors import ServerUnreachable

log = logging.getLogger("parallax_client")

DEFAULT_URL = "http://127.0.0.1:9920"


def _config(url: str | None, token: str | None, timeout: float, fail_closed: bool) -> Config:
    if timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return Config(
        url=url or os.environ.get("PARALLAX_URL") or DEFAULT_URL,
        token=token if token is not None else os.environ.get("PARALLAX_AUTH_TOKEN") or None,
        timeout=float(timeout),
        fail_closed=fail_closed,
    )


def _fail_open(err: ServerUnreachable) -> Decision:
    """``fail_closed=False``: the call may go on, marked as unchecked."""
    log.warning("%s", err)
    return Decision(
        action="allow",
        reasons=[f"unchecked: {err.cause}"],
        failure={"kind": "unreachable", "message": str(err), "fail_mode": "open"},
    )


def _wait(wait: float | None) -> float:
    if wait is None:
        return 0.0
    if wait < 0:
        raise ValueError(f"wait must be zero or more seconds, not {wait!r}")
    return float(wait)


class _Base:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        timeout: float = 5.0,
        *,
        fail_closed: bool = True,
        session_id: str | None = None,
    ) -> None:
        """``url`` defaults to ``$PARALLAX_URL``, else ``http://127.0.0.1:9920``;
        ``token`` to ``$PARALLAX_AUTH_TOKEN`` (the server's ``server.auth_token``).
        ``timeout`` bounds each request, in seconds (plus any approval wait).
        With ``fail_closed`` (the default) an unreachable server raises
        :class:`~parallax_client.ServerUnreachable`; without, the call is
        allowed with a warning and the decision's ``failure`` set.
        ``session_id`` is sent with every check that names none."""
        self.config = _config(url, token, timeout, fail_closed)
        self.session_id = session_id

    @property
    def url(self) -> str:
        return self.config.url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.url!r})"


class Parallax(_Base, SyncChecks):
    """A blocking client: ``Parallax("http://127.0.0.1:9920").check_tool(...)``."""

    def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        """``POST /evaluate``. With ``wait``, the server holds an ``approve``
        answer up to that many seconds for the human's decision."""
        w = _wait(wait)
        try:
            answer = request_sync(
                self.config, "POST", "/evaluate", dict(event), {"wait": w or None}, wait=w
            )
        except ServerUnreachable as e:
            if self.config.fail_closed:
                raise
            return _fail_open(e)
        return Decision.from_json(answer)

    def approval(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """``GET /approvals/{id}``; with ``wait``, once decided or after that many seconds."""
        w = _wait(wait)
        answer = request_sync(
            self.config, "GET", "/approvals/" + urllib.parse.quote(approval_id, safe=""), None, {"wait": w or None}, wait=w
        )
        return Approval.from_json(answer)

    def health(self) -> dict[str, Any]:
        """``GET /health``: status, version, rule counts."""
        answer = request_sync(self.config, "GET", "/health")
        return dict(answer) if isinstance(answer, Mapping) else {}


class AsyncParallax(_Base, AsyncChecks):
    """The awaitable client: ``await AsyncParallax(url).check_tool(...)``."""

    async def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        """See :meth:`Parallax.evaluate`."""
        w = _wait(wait)
        try:
            answer = await request_async(
                self.config, "POST", "/evaluate", dict(event), {"wait": w or None}, wait=w
            )
        except ServerUnreachable as e:
            if self.config.fail_closed:
                raise
            return _fail_open(e)
        return Decision.from_json(answer)

    async def approval(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """See :meth:`Parallax.approval`."""
        w = _wait(wait)
        answer = await request_async(
            self.config, "GET", "/approvals/" + urllib.parse.quote(approval_id, safe=""), None, {"wait": w or None}, wait=w
        )
        return Approval.from_json(answer)

    async def health(self) -> dict[str, Any]:
        """See :meth:`Parallax.health`."""
        answer = await request_async(self.config, "GET", "/health")
        return dict(answer) if isinstance(answer, Mapping) else {}


def twins(client: Any) -> tuple[Any, Any]:
    """A sync and an async client with the same settings (one is ``client``):
    :class:`Parallax` and :class:`AsyncParallax`, or an embedded engine's
    :class:`~parallax_client.embedded.Embedded` and
    :class:`~parallax_client.embedded.AsyncEmbedded` sharing one engine."""
    from .embedded import AsyncEmbedded, Embedded

    if isinstance(client, Embedded):
        return client, AsyncEmbedded._sharing(client)
    if isinstance(client, AsyncEmbedded):
        return Embedded._sharing(client), client
    cfg = client.config
    kw: dict[str, Any] = dict(
        url=cfg.url,
        token=cfg.token,
        timeout=cfg.timeout,
        fail_closed=cfg.fail_closed,
        session_id=client.session_id,
    )
    if isinstance(client, Parallax):
        return client, AsyncParallax(**kw)
    return Parallax(**kw), client
