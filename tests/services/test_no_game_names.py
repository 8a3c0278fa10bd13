"""The services know no game by name: what they need comes from the game modules.

Checked from the code itself (its syntax tree, so docstrings and comments, which cite
``docs/rules/hokm.md``, do not count): no module under ``services/`` imports a game's package or
its generated protos, names a game's message types, or spells a game's name in a string or
an identifier. The names come from the registry, so a new game is checked as soon as it is
registered in ``engine/registry.py``.

Exceptions, each justified:

- ``services/cli/``: the command line is a front end, not a service: ``dast sim hokm`` and
  ``dast arena hand`` are commands per game, and ``dast play`` draws each game's screen.
- ``services/console/``: the operator console is a front end too: it draws a replay frame
  of each game for an operator (a Hokm table's seats, tricks and scores), as ``dast play``
  draws a player's screen; it serves nothing a client calls.
- ``QuickMatchRequest.hokm_variant`` and ``.hand_players`` in the lobby: deprecated fields
  of the wire schema that older apps still send; the lobby turns them into a seat count
  (``requested_players``) and knows nothing else of either game.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from engine.registry import GAMES

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "services"
EXEMPT_PACKAGES = (SERVICES / "cli", SERVICES / "console")
ALLOWED: dict[str, set[str]] = {
    "services/lobby/service.py": {"hokm_variant", "hand_players"},
}


def _game_names() -> set[str]:
    return {game.NAME for game in GAMES.values()}


def _type_names() -> set[str]:
    names = set()
    for game in GAMES.values():
        schema = game.SCHEMA
        for message in (schema.rules, schema.command, schema.event, schema.view):
            names.add(message.DESCRIPTOR.name)
    return names


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of string constants that are docstrings (a module's, a class's, a
    function's, or an attribute's: any string standing alone as a statement)."""
    return {
        id(node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _findings(path: Path) -> Iterator[tuple[int, str]]:
    games = _game_names()
    types = _type_names()
    tree = ast.parse(path.read_text(), str(path))
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                modules += [f"{node.module}.{name}" for name in modules] + [node.module]
            for module in modules:
                parts = set(module.split("."))
                if parts & games or parts & {f"{name}_pb2" for name in games}:
                    yield node.lineno, f"imports {module}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and node.value.strip().lower() in games:
                yield node.lineno, f"the string {node.value!r}"
        elif isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef | ast.ClassDef
                        | ast.arg | ast.keyword):
            name = (node.id if isinstance(node, ast.Name) else node.attr
                    if isinstance(node, ast.Attribute) else node.arg
                    if isinstance(node, ast.arg | ast.keyword) else node.name)
            if name is None:
                continue
            if name in types or any(part in games for part in name.lower().split("_")):
                yield node.lineno, f"the name {name}"


def test_no_service_names_a_game() -> None:
    found = []
    for path in sorted(SERVICES.rglob("*.py")):
        if any(path.is_relative_to(package) for package in EXEMPT_PACKAGES):
            continue
        relative = path.relative_to(ROOT).as_posix()
        allowed = ALLOWED.get(relative, set())
        for line, what in _findings(path):
            if not any(name in what.split() for name in allowed):
                found.append(f"{relative}:{line}: {what}")
    assert not found, "services name games:\n" + "\n".join(found)


def test_the_check_sees_game_names(tmp_path: Path) -> None:
    # The check itself must catch what it looks for (a file written as the old code was).
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from dast.v1 import hokm_pb2\n"
        "def field(command):\n"
        "    return 'hokm' if command.DESCRIPTOR.name == 'HokmCommand' else 'hand'\n"
        "x = hokm_pb2.HokmRules()\n"
    )
    findings = [what for _, what in _findings(sample)]
    assert "imports dast.v1.hokm_pb2" in findings
    assert "the string 'hokm'" in findings and "the string 'hand'" in findings
    assert "the name HokmRules" in findings
    # The lobby's deprecated wire fields are the one exception inside a service.
    lobby = [what for _, what in _findings(SERVICES / "lobby" / "service.py")]
    assert lobby and all(what.split()[-1] in ALLOWED["services/lobby/service.py"]
                         for what in lobby)
