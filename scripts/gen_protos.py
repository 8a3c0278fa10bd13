"""Regenerate the Python code of protos/dast/v1/*.proto (``make proto``).

The generated modules live beside their .proto files and are committed;
``tests/test_protos_fresh.py`` regenerates into a temporary folder and fails when the
committed code is stale. The code generators are pinned exactly in pyproject.toml so that
the same schema always yields the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
SCHEMA_DIR = PROTO_ROOT / "dast" / "v1"


def generate(out_dir: Path) -> list[Path]:
    """Compile every schema file into ``out_dir``; return the generated files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in SCHEMA_DIR.glob("*.proto"))
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found: install the test extras (make venv)")
    grpc_plugin = shutil.which("protoc-gen-mypy_grpc", path=str(Path(sys.executable).parent))
    include = str(Path(protoc.__file__).parent / "_proto")
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"-I{ROOT / 'third_party' / 'googleapis'}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"--mypy_out={out_dir}",
        f"--plugin=protoc-gen-mypy_grpc={grpc_plugin}",
        f"--mypy_grpc_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    generated = sorted((out_dir / "dast" / "v1").glob("*_pb2*.py*"))
    # The grpc plugins write stubs for files without services too: keep only real ones.
    for path in list(generated):
        if "_pb2_grpc" in path.name and "add_" not in path.read_text():
            path.unlink()
            generated.remove(path)
    return generated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=PROTO_ROOT)
    args = parser.parse_args()
    for path in generate(args.out):
        print(path.relative_to(args.out))


if __name__ == "__main__":
    main()
