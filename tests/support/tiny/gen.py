"""Regenerate ``tiny_pb2.py``/``tiny_pb2.pyi`` from ``tiny.proto`` (the generators of
``scripts/gen_protos.py``, pinned in pyproject.toml)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
PROTOS = HERE.parents[2] / "protos"


def generate(out_dir: Path) -> list[Path]:
    """Compile ``tiny.proto`` into ``out_dir``; return the generated files."""
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found: install the test extras (make venv)")
    include = str(Path(protoc.__file__).parent / "_proto")
    args = ["protoc", f"-I{HERE}", f"-I{PROTOS}", f"-I{include}", f"--python_out={out_dir}",
            f"--plugin=protoc-gen-mypy={plugin}", f"--mypy_out={out_dir}", "tiny.proto"]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sorted(out_dir.glob("tiny_pb2.py*"))


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for path in generate(Path(scratch)):
            shutil.copy(path, HERE / path.name)
            print(path.name)


if __name__ == "__main__":
    main()
