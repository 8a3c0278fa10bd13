"""The generated Python code of protos/dast/v1 must match the .proto files (`make proto`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protos"] = module
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    generated = _generator().generate(tmp_path)
    committed_dir = ROOT / "protos" / "dast" / "v1"
    fresh = {p.name: p.read_bytes() for p in generated}
    committed = {p.name: p.read_bytes() for p in committed_dir.glob("*_pb2*.py*")}
    assert sorted(fresh) == sorted(committed), "run `make proto`: generated files differ"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"run `make proto`: stale generated code in {stale}"
