"""The tiny game's generated code matches ``tiny.proto`` (as tests/test_protos_fresh.py
checks the schema's)."""

from __future__ import annotations

from pathlib import Path

from tests.support.tiny import gen


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    generated = gen.generate(tmp_path)
    assert [path.name for path in generated] == ["tiny_pb2.py", "tiny_pb2.pyi"]
    for path in generated:
        assert path.read_bytes() == (gen.HERE / path.name).read_bytes(), (
            f"{path.name} is stale: run .venv/bin/python -m tests.support.tiny.gen"
        )
