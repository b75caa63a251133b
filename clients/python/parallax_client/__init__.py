"""Parallax's Python client.

``Parallax`` / ``AsyncParallax`` ask the server about events; ``Firewall``
wraps tool SDKs (through an ``Adapter``) and plain tool functions
(``@fw.guard``) so each call is allowed, rewritten, held for a human or
denied (``Denied``) as the policies say.

    from parallax_client import Parallax, Firewall, Denied
    from parallax_client.adapters.slack import SlackAdapter

    fw = Firewall(Parallax("http://127.0.0.1:9920"))
    slack = fw.wrap(SlackAdapter(WebClient(token=...)))
    slack.chat_postMessage(channel="#sales", text="...")   # Denied if a policy says no
"""

from ._http import VERSION as __version__
from .adapter import Adapter
from .client import AsyncParallax, Parallax
from .decision import Approval, Decision, Kind, RuleResult
from .errors import (
    ApiError,
    ApprovalPending,
    Denied,
    ParallaxError,
    ProtocolError,
    ServerUnreachable,
)
from .firewall import Firewall
from .toolcall import ToolCall

__all__ = [
    "__version__",
    "Adapter",
    "ApiError",
    "Approval",
    "ApprovalPending",
    "AsyncParallax",
    "Decision",
    "Denied",
    "Firewall",
    "Kind",
    "Parallax",
    "ParallaxError",
    "ProtocolError",
    "RuleResult",
    "ServerUnreachable",
    "ToolCall",
]
