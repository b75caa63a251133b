"""LangChain: a tool wrapper that asks Parallax before each run.

    from parallax_client.integrations.langchain import guard_tool
    safe = guard_tool(my_tool, fw)      # same name, description and schema

Each call (``invoke``/``ainvoke``, as an agent makes it) is checked as tool
``<tool.name>`` with its validated arguments, approvals are waited for, a
rewrite replaces the arguments it changed, and a denial raises
:class:`~parallax_client.Denied`; with ``on_deny="message"`` the tool
returns "Parallax denied ..." instead, so the model learns why and goes on.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool

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
