"""SQL through a DB-API 2.0 cursor or connection (psycopg for Postgres,
sqlite3, ...): ``execute`` and ``executemany`` are governed as
``postgres.execute`` (the adapter's ``name``, changeable), with ``body`` the
SQL text and ``metadata.parameters`` the number of parameters bound (never
their values). Everything else (``fetchall``, ``commit``...) passes through.
Rewrites are not applied to SQL: a policy that rewrites a statement denies
it instead, since a changed query is not the query the agent meant.
"""

from __future__ import annotations

from typing import Any

from ..adapter import Adapter, T
from ..decision import Decision
from ..errors import Denied
from ..toolcall import ToolCall


class SqlAdapter(Adapter[T]):
    """``fw.wrap(SqlAdapter(psycopg.connect(...).cursor()))``."""

    name = "postgres"
    methods = frozenset({"execute", "executemany"})

    def __init__(self, target: T, *, name: str | None = None) -> None:
        super().__init__(target)
        if name:
            self.name = name  # type: ignore[misc]

    def normalise(self, method: str, kwargs: dict[str, Any]) -> ToolCall:
        sql = kwargs.get("sql", kwargs.get("query", kwargs.get("operation")))
        params = kwargs.get("parameters", kwargs.get("params", kwargs.get("seq_of_parameters")))
        meta: dict[str, Any] = {"method": method}
        if params is not None:
            try:
                meta["parameters"] = len(params)
            except TypeError:
                pass
        return ToolCall(
            adapter=self.name,
            action="execute",
            recipient=None,
            body=sql if isinstance(sql, str) else (str(sql) if sql is not None else None),
            metadata=meta,
            method=method,
            kwargs=kwargs,
        )

    def execute(self, call: ToolCall, decision: Decision) -> Any:
        if call.rewritten(decision.rewritten_event).body != call.body:
            raise Denied(
                "a policy rewrote this SQL; a rewritten statement is not run",
                rule_ids=decision.rule_ids,
                decision=decision,
                call=call,
            )
        return super().execute(call, decision)
