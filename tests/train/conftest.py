"""Fixtures shared by the training tests: one tiny training run per session, and torch on
one thread in every test."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from train_helpers import TinyRun, tiny_run_dir  # noqa: E402


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    """The shared tiny MaskablePPO run (trained on first use)."""
    return tiny_run_dir(tmp_path_factory)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)
