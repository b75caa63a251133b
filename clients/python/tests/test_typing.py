"""The package says it is typed (``py.typed``): mypy --strict must agree on
the core and the adapters (the integrations are left out: checking them
means analysing the whole of openai-agents and langchain-core, a minute and
a half here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "parallax_client"


def test_mypy_strict() -> None:
    pytest.importorskip("mypy")
    run = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10",
            "--cache-dir", "/dev/null", "--exclude", "parallax_client/integrations/",
            str(PACKAGE),
        ],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
