"""LangChain: a tool wrapper that asks Parallax before each run, and a
retriever wrapper that checks queries and drops poisoned documents.

    from parallax_client.integrations.langchain import guard_tool
    safe = guard_tool(my_tool, fw)      # same name, description and schema

Each call (``invoke``/``ainvoke``, as an agent makes it) is checked as tool
``<tool.name>`` with its validated arguments, approvals are waited for, a
rewrite replaces the arguments it changed, and a denial raises
:class:`~parallax_client.Denied`; with ``on_deny="message"`` the tool
returns "Parallax denied ..." instead, so the model learns why and goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict

from ..decision import Decision
from ..errors import Denied
from ..firewall import Firewall

OnDeny = Literal["raise", "message"]


def guard_tool(tool: BaseTool, firewall: Firewall, *, on_deny: OnDeny = "raise") -> BaseTool:
    """``tool``, checked by ``firewall`` on every call."""

    def refused(e: Denied) -> str:
        if on_deny == "message":
            return f"Parallax denied {tool.name}: {e.reason}"
        raise e

    def run(**kwargs: Any) -> Any:
        try:
            args = firewall.enforce(tool.name, kwargs)
        except Denied as e:
            return refused(e)
        return tool.invoke(args)

    async def arun(**kwargs: Any) -> Any:
        try:
            args = await firewall.aenforce(tool.name, kwargs)
        except Denied as e:
            return refused(e)
        return await tool.ainvoke(args)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        infer_schema=False,
        return_direct=tool.return_direct,
    )


class GuardedRetriever(BaseRetriever):
    """A LangChain retriever whose queries and documents Parallax checks:

        from parallax_client.integrations.langchain import GuardedRetriever
        safe = GuardedRetriever(retriever=my_retriever, checks=Parallax(url))

    The query is checked first (``retrieval.before``: a secret in it is
    redacted before it is sent, a refused query raises
    :class:`~parallax_client.Denied`); then the documents the wrapped
    retriever returns (``retrieval.after``): the ones Parallax names in
    ``drop_documents`` are left out, the rest come back with any secret in
    their text redacted, and a refused retrieval raises ``Denied`` (or,
    with ``on_deny="empty"``, returns no documents). ``checks`` is any
    client with ``check_retrieval`` (``Parallax``, ``Embedded``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: BaseRetriever
    checks: Any
    on_deny: Literal["raise", "empty"] = "raise"

    def _refused(self, decision: Decision) -> list[Document]:
        if self.on_deny == "empty":
            return []
        raise Denied(
            decision.reason or "Parallax refused the retrieval",
            rule_ids=decision.rule_ids,
            reasons=decision.reasons,
            decision=decision,
        )

    def _query(self, query: str) -> tuple[str | None, list[Document] | None]:
        before = self.checks.check_retrieval(query)
        if before.action in ("block", "approve"):
            return None, self._refused(before)
        if before.rewritten_event is not None and isinstance(before.rewritten_event.get("query"), str):
            return str(before.rewritten_event["query"]), None
        return query, None

    def _documents(self, query: str, docs: list[Document]) -> list[Document]:
        after = self.checks.check_retrieval(query, docs)
        if after.action in ("block", "approve"):
            return self._refused(after)
        kept = after.kept(docs)
        texts = after.kept_texts()
        if texts is None or len(texts) != len(kept):
            return kept
        return [
            d if d.page_content == t else d.model_copy(update={"page_content": t}) for d, t in zip(kept, texts)
        ]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        sent, refused = self._query(query)
        if sent is None:
            return refused or []
        return self._documents(sent, self.retriever.invoke(sent))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        sent, refused = await asyncio.to_thread(self._query, query)
        if sent is None:
            return refused or []
        docs = await self.retriever.ainvoke(sent)
        return await asyncio.to_thread(self._documents, sent, docs)
