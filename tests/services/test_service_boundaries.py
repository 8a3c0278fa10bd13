"""No service package imports another's: what one needs from another comes over gRPC or
the bus. Checked from the code's own imports (every ``import``/``from`` statement anywhere in
a module, functions included), not from a list kept by hand.

``services/platform`` is the shared toolbox every service may import; ``services/cli`` and
``services/compose.py`` (the composition root) sit above the services and may import them
all. A service importing the root or the command line would be a cycle in disguise, so that
counts as a crossing too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "services"
TOOLBOX = "platform"
ABOVE_THE_SERVICES = frozenset({"cli", "compose"})


def service_packages() -> list[str]:
    """The service packages: every package under services/ but the toolbox and the CLI."""
    return sorted(
        path.name for path in SERVICES.iterdir()
        if (path / "__init__.py").exists() and path.name not in {TOOLBOX, *ABOVE_THE_SERVICES}
    )


def imported_modules(path: Path) -> list[str]:
    """The absolute module names ``path`` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module.rpartition(".")[0] if path.name != "__init__.py" else module
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append(name)
            # ``from services import lobby`` names the package in the alias.
            if name == "services":
                found.extend(f"services.{alias.name}" for alias in node.names)
    return found


def import_counts() -> dict[str, Counter[str]]:
    """Per service package, how many import statements reach each part of ``services``
    (``own``, ``platform``, or another package's name)."""
    counts: dict[str, Counter[str]] = {}
    for package in service_packages():
        counter: Counter[str] = Counter()
        for path in sorted((SERVICES / package).rglob("*.py")):
            for name in imported_modules(path):
                parts = name.split(".")
                if parts[0] != "services" or len(parts) < 2:
                    continue
                target = parts[1]
                counter["own" if target == package else target] += 1
        counts[package] = counter
    return counts


def test_the_service_packages_are_the_expected_ones() -> None:
    # A new service package is checked as soon as it exists; this pins today's set so a
    # rename does not silently shrink what the boundary test covers.
    assert {"game", "lobby", "bot"} <= set(service_packages())


def test_no_service_package_imports_another() -> None:
    counts = import_counts()
    crossings = {
        package: {target: n for target, n in counter.items()
                  if target not in ("own", TOOLBOX)}
        for package, counter in counts.items()
    }
    assert all(not targets for targets in crossings.values()), (
        f"service packages importing another service (or the root): {crossings}; "
        "reach it over gRPC or the bus instead"
    )
    # Every service does use the toolbox: the check above is not vacuous.
    assert all(counter[TOOLBOX] > 0 for counter in counts.values()), counts


def test_the_import_scan_sees_relative_and_nested_imports(tmp_path: Path) -> None:
    sample = ROOT / "services" / "game" / "service.py"
    names = imported_modules(sample)
    assert "services.platform.errors" in names
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from services.lobby import store\n")
    tree = ast.parse(probe.read_text())
    nested = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert nested == ["services.lobby"]


_LOADED_SERVICES = """
import asyncio, sys
from services.compose import run
from services.platform.config import load_settings

async def main() -> None:
    stop = asyncio.Event()
    stop.set()  # start everything, then stop at once
    await run(load_settings(), stop=stop)

asyncio.run(main())
print(sorted({name.split(".")[1] for name in sys.modules if name.startswith("services.")}))
"""


RUNS_BESIDE = {"lobby": {"chat"}}
"""Service packages a process of another runs too: table talk and reports serve beside the
lobby, over its tables (docs/architecture.md "Table talk and reports")."""


@pytest.mark.parametrize("service", ["game", "lobby", "bot", "tournament", "stats"])
def test_a_process_of_one_service_loads_no_other_service(service: str, tmp_path: Path) -> None:
    """The composition root imports a service only when the process runs it, so a replica
    of one service carries no other's code (nor its stores' tables) in memory."""
    env = {**os.environ, "DAST_SERVICES": service, "DAST_LISTEN": "127.0.0.1:0",
           "DAST_DATA_DIR": str(tmp_path), "DAST_GAME_TARGET": "127.0.0.1:1",
           "DAST_LOG_LEVEL": "warning"}
    for name in ("DAST_DATABASE_URL", "DAST_NATS_URL", "DAST_METRICS_PORT"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", _LOADED_SERVICES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    loaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert set(loaded) == {service, TOOLBOX, "compose", *RUNS_BESIDE.get(service, ())}, loaded


if __name__ == "__main__":  # the figures of docs/architecture.md
    for package, counter in import_counts().items():
        print(package, dict(sorted(counter.items())))
