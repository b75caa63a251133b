"""The engine in-process: no server, no socket.

:class:`Embedded` compiles a Parallax config or a bare parlok policy file
(``version: 1`` and ``policies:``) with the compiled extension
``parallax_client._engine`` (the same compiler and decision service as
``parallax serve``) and answers each check in microseconds. It has the same
methods as :class:`~parallax_client.Parallax` and answers with the same
:class:`~parallax_client.Decision` objects, read from the same JSON, so
:class:`~parallax_client.Firewall` takes either::

    fw = Firewall.from_file("firewall.yaml")      # embedded
    fw = Firewall(Parallax("http://127.0.0.1:9920"))  # server

State: temporal rules use an in-process side-store; approvals and the
known-recipients memory live in parlok's ``state_db`` (a bare policy file)
or ``approvals.path`` (a config), in memory when a bare file names none. A
held call is decided with :meth:`Embedded.approve` / :meth:`Embedded.deny`
(another thread of the program), or by a ``parallax serve`` sharing the
same file (its approvals API, dashboard or Slack buttons): the waiting call
re-reads the file twice a second.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Mapping

from ._checks import AsyncChecks, SyncChecks
from .client import _wait
from .decision import Approval, Decision
from .errors import ApiError


def _engine_module() -> Any:
    try:
        from . import _engine
    except ImportError as e:  # pragma: no cover - only without the extension
        raise ImportError(
            "parallax_client was installed without its compiled engine "
            "(parallax_client._engine); install the package with pip from "
            "clients/python so maturin builds it, or use Parallax(url) against "
            f"a server: {e}"
        ) from e
    return _engine


class Embedded(SyncChecks):
    """The blocking embedded client: ``Embedded("firewall.yaml").check_tool(...)``.

    ``path`` is compiled at once; a file that does not compile raises
    ``ValueError`` listing every error, as ``parallax lint`` would.
    ``session_id`` is given to every check that names none.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None) -> None:
        self.path = os.fspath(path)
        self._engine = _engine_module().Engine(self.path)
        self.session_id = session_id

    @classmethod
    def _sharing(cls, other: Embedded | AsyncEmbedded) -> Embedded:
        twin = cls.__new__(cls)
        twin.path, twin._engine, twin.session_id = other.path, other._engine, other.session_id
        return twin

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    @property
    def summary(self) -> dict[str, Any]:
        """What was compiled: backend, fingerprint, evaluators and rule counts."""
        out: dict[str, Any] = json.loads(self._engine.summary())
        return out

    def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        """Decides ``event`` (as ``POST /evaluate``). With ``wait``, an
        ``approve`` is held up to that many seconds for its decision."""
        seconds = _wait(wait)
        try:
            try:
                # Python objects straight in and out (no JSON text).
                answer = self._engine.evaluate_dict(event, seconds)
            except TypeError:
                # A value JSON cannot hold: sent as its repr, as the HTTP
                # client sends it.
                body = json.dumps(dict(event), default=repr)
                answer = json.loads(self._engine.evaluate(body, seconds))
        except ValueError as e:
            code, _, message = str(e).partition(": ")
            raise ApiError(400, code, message or str(e)) from None
        return Decision.from_json(answer)

    def approval(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """The approval as recorded; with ``wait``, once decided or after
        that many seconds. ``KeyError`` if there is no such approval."""
        return Approval.from_json(json.loads(self._engine.approval(approval_id, _wait(wait))))

    def pending(self, *, limit: int = 100) -> list[Approval]:
        """The approvals waiting for a decision, newest first (as ``GET
        /approvals?status=pending``)."""
        return [Approval.from_json(a) for a in json.loads(self._engine.approvals("pending", limit))]

    def approve(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """Approves a held call; the call waiting on it goes ahead at once."""
        return Approval.from_json(json.loads(self._engine.decide(approval_id, True, by, comment)))

    def deny(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """Denies a held call; the call waiting on it raises ``Denied``."""
        return Approval.from_json(json.loads(self._engine.decide(approval_id, False, by, comment)))

    def health(self) -> dict[str, Any]:
        """The embedded engine's summary, in place of ``GET /health``."""
        return {"status": "ok", "embedded": True, **self.summary}


class AsyncEmbedded(AsyncChecks):
    """:class:`Embedded`, awaited. A decision that does not wait runs
    inline (microseconds); waits run in a worker thread."""

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None) -> None:
        self._sync = Embedded(path, session_id=session_id)

    @classmethod
    def _sharing(cls, other: Embedded | AsyncEmbedded) -> AsyncEmbedded:
        twin = cls.__new__(cls)
        twin._sync = Embedded._sharing(other)
        return twin

    @property
    def path(self) -> str:
        return self._sync.path

    @property
    def session_id(self) -> str | None:
        return self._sync.session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        self._sync.session_id = value

    @property
    def _engine(self) -> Any:
        return self._sync._engine

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    async def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        """See :meth:`Embedded.evaluate`."""
        if not wait:
            return self._sync.evaluate(event)
        return await asyncio.to_thread(self._sync.evaluate, event, wait=wait)

    async def approval(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """See :meth:`Embedded.approval`."""
        if not wait:
            return self._sync.approval(approval_id)
        return await asyncio.to_thread(self._sync.approval, approval_id, wait=wait)

    async def pending(self, *, limit: int = 100) -> list[Approval]:
        """See :meth:`Embedded.pending`."""
        return self._sync.pending(limit=limit)

    async def approve(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """See :meth:`Embedded.approve`."""
        return self._sync.approve(approval_id, by=by, comment=comment)

    async def deny(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """See :meth:`Embedded.deny`."""
        return self._sync.deny(approval_id, by=by, comment=comment)

    async def health(self) -> dict[str, Any]:
        """See :meth:`Embedded.health`."""
        return self._sync.health()
