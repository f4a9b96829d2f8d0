"""A clean model environment for tests of model settings and clients.

Import the autouse fixture into a test module: ``from model_env import clean_env  # noqa: F401``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No SOPGRAPH_*/AWS_*/OPENAI_* from the developer's shell; cwd without sopgraph.toml."""
    for name in list(os.environ):
        if name.startswith(("SOPGRAPH_", "AWS_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.chdir(tmp_path)
    return tmp_path
