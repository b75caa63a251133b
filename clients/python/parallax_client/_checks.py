"""The ``check_*`` shortcuts, written once for every client: each builds its
event (:mod:`.events`) and hands it to the client's own ``evaluate`` — over
HTTP (:class:`~parallax_client.Parallax`) or in-process
(:class:`~parallax_client.Embedded`), blocking or awaited."""

from __future__ import annotations

from typing import Any, Mapping

from . import events
from .decision import Decision


class SyncChecks:
    """``check_tool``, ``check_message``, ``check_result``, ``check_memory``,
    ``check_retrieval`` over a blocking
    ``evaluate``; the class supplies ``evaluate`` and ``session_id``."""

    session_id: str | None

    def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        raise NotImplementedError

    def _session(self, session_id: str | None) -> str | None:
        return session_id if session_id is not None else self.session_id

    def check_tool(
        self,
        name: str,
        args: Any,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: float | None = None,
    ) -> Decision:
        """Asks about tool ``name`` about to run with ``args`` (``tool.before``)."""
        event = events.tool_event(name, args, session_id=self._session(session_id), metadata=metadata)
        return self.evaluate(event, wait=wait)

    def check_message(
        self, text: str, *, session_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Decision:
        """Asks about a user message before the model sees it (``message.before``)."""
        return self.evaluate(events.message_event(text, session_id=self._session(session_id), metadata=metadata))

    def check_result(
        self,
        name: str,
        result: Any,
        *,
        args: Any = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Asks about what tool ``name`` returned before the model sees it (``tool.after``)."""
        return self.evaluate(
            events.result_event(name, result, args=args, session_id=self._session(session_id), metadata=metadata)
        )

    def check_memory(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Asks about ``text`` about to be written to the agent's memory
        (``memory.before``). On ``redact``, store
        ``decision.rewritten_event["memory_text"]`` instead."""
        return self.evaluate(
            events.memory_event(text, key=key, session_id=self._session(session_id), metadata=metadata)
        )

    def check_retrieval(
        self,
        query: str | None,
        documents: Any = None,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Asks about a retrieval query before it is sent
        (``retrieval.before``), or, with ``documents``, about what it
        brought back (``retrieval.after``): ``decision.drop_documents``
        names the documents to leave out and ``decision.kept(documents)``
        gives the rest."""
        return self.evaluate(
            events.retrieval_event(query, documents, session_id=self._session(session_id), metadata=metadata)
        )


class AsyncChecks:
    """:class:`SyncChecks`, awaited, over an async ``evaluate``."""

    session_id: str | None

    async def evaluate(self, event: Mapping[str, Any], *, wait: float | None = None) -> Decision:
        raise NotImplementedError

    def _session(self, session_id: str | None) -> str | None:
        return session_id if session_id is not None else self.session_id

    async def check_tool(
        self,
        name: str,
        args: Any,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: float | None = None,
    ) -> Decision:
        """See :meth:`SyncChecks.check_tool`."""
        event = events.tool_event(name, args, session_id=self._session(session_id), metadata=metadata)
        return await self.evaluate(event, wait=wait)

    async def check_message(
        self, text: str, *, session_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Decision:
        """See :meth:`SyncChecks.check_message`."""
        return await self.evaluate(
            events.message_event(text, session_id=self._session(session_id), metadata=metadata)
        )

    async def check_result(
        self,
        name: str,
        result: Any,
        *,
        args: Any = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """See :meth:`SyncChecks.check_result`."""
        return await self.evaluate(
            events.result_event(name, result, args=args, session_id=self._session(session_id), metadata=metadata)
        )

    async def check_memory(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """See :meth:`SyncChecks.check_memory`."""
        return await self.evaluate(
            events.memory_event(text, key=key, session_id=self._session(session_id), metadata=metadata)
        )

    async def check_retrieval(
        self,
        query: str | None,
        documents: Any = None,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Decision:
        """See :meth:`SyncChecks.check_retrieval`."""
        return await self.evaluate(
            events.retrieval_event(query, documents, session_id=self._session(session_id), metadata=metadata)
        )
