"""Run the ``>>>`` examples in the engine's docstrings (python-chess runs its doctests in CI)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import engine


def _engine_modules() -> list[str]:
    return sorted(
        info.name for info in pkgutil.walk_packages(engine.__path__, prefix="engine.")
    )


@pytest.mark.parametrize("name", _engine_modules())
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
