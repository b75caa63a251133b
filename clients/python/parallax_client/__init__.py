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

``Firewall.from_file("firewall.yaml")`` decides in-process instead, with
the compiled engine (``Embedded``): no server to run.
"""

from pkgutil import extend_path

# The compiled engine (_engine) lives in the installed wheel; a checkout's
# source run ahead of it on sys.path (the test suite does so) still finds it.
__path__ = extend_path(__path__, __name__)

from ._http import VERSION as __version__  # noqa: E402
from .adapter import Adapter
from .client import AsyncParallax, Parallax
from .decision import Approval, Decision, Kind, RuleResult
from .embedded import AsyncEmbedded, Embedded
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
    "AsyncEmbedded",
    "AsyncParallax",
    "Decision",
    "Denied",
    "Embedded",
    "Firewall",
    "Kind",
    "Parallax",
    "ParallaxError",
    "ProtocolError",
    "RuleResult",
    "ServerUnreachable",
    "ToolCall",
]
