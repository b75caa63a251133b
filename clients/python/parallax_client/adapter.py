"""parlok's adapter: how one SDK's calls become :class:`ToolCall`\\ s and how
a verdict is carried out on the real SDK.

An adapter holds the SDK object (``target``), says which of its methods are
governed (``guards``), turns a call into a :class:`ToolCall`
(``normalise``), and runs it (``execute``), writing a rewrite back into the
SDK's own arguments (``apply``). Every other attribute of the SDK passes
through :meth:`Firewall.wrap <parallax_client.Firewall.wrap>` untouched.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from ._calls import invoke
from .decision import Decision
from .toolcall import ToolCall

T = TypeVar("T")


class Adapter(Generic[T]):
    """Base class of the adapters; subclass it for your own SDK.

    Set ``name`` (the ``<adapter>`` of ``tool_name``) and ``methods`` (the
    governed method names), and implement :meth:`normalise` and, if the
    policies may rewrite, :meth:`apply`.
    """

    name: ClassVar[str] = ""
    methods: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, target: T) -> None:
        self.target = target

    def guards(self, method: str) -> bool:
        """Whether ``method`` goes through the firewall (else it passes through)."""
        return method in self.methods

    def normalise(self, method: str, kwargs: dict[str, Any]) -> ToolCall:
        """The tool call that ``target.<method>(**kwargs)`` stands for."""
        raise NotImplementedError(f"{type(self).__name__} must implement normalise()")

    def apply(self, call: ToolCall) -> dict[str, Any]:
        """The SDK arguments that carry out ``call``: its ``kwargs`` with
        ``recipient``, ``subject`` and ``body`` written back where they came
        from. The default passes the arguments unchanged."""
        return dict(call.kwargs)

    def execute(self, call: ToolCall, decision: Decision) -> Any:
        """Runs the call the verdict lets through (rewritten when it says so).
        For an async SDK method this returns the coroutine."""
        final = call.rewritten(decision.rewritten_event)
        return invoke(getattr(self.target, final.sdk_method), self.apply(final))
