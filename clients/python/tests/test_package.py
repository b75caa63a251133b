"""The installed distribution: the name the roadmap announced, the import
name, no runtime dependencies in the core, the typing marker."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import parallax_client


def test_distribution_and_core_without_dependencies() -> None:
    dist = metadata.distribution("parallax-client")
    assert dist.version == parallax_client.__version__
    core = [r for r in dist.requires or [] if "extra ==" not in r]
    assert core == [], f"the core must need nothing outside the standard library: {core}"
    extras = set(dist.metadata.get_all("Provides-Extra") or [])
    assert {"slack", "http", "openai-agents", "langchain", "test"} <= extras


def test_typed() -> None:
    assert (Path(parallax_client.__file__).parent / "py.typed").is_file()


def test_the_import_shape_the_readme_shows() -> None:
    from parallax_client import Denied, Firewall, Parallax  # noqa: F401
    from parallax_client.adapters.slack import SlackAdapter  # noqa: F401
