"""``dast sim``: bots play whole matches through the engine, with a progress bar.

Seats follow the policies given with ``--bots`` (a comma-separated list, cycled over the
seats). To keep the comparison fair, the seating rotates by one seat every match, so every
policy sits in every seat equally often. Each match has its own server seed derived from
``--seed``, so a run is reproducible. ``--export DIR`` writes every match's log in the export
format (JSON Lines, hash-chained); no server played them, so they carry no seal and
``dast verify --unsealed`` checks them.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from engine import hand, hokm
from engine.core.chain import chain_log
from engine.core.logformat import dump_jsonl
from engine.core.protocol import Game
from engine.core.testing import Policy, play_match
from engine.hand.bots import BOTS as HAND_BOTS
from engine.hokm.bots import BOTS as HOKM_BOTS

app = typer.Typer(help="Bots play whole matches through the engine.", no_args_is_help=True)

HOKM_TARGET_SCORES = (3, 5, 7, 10)
"""The match lengths a table offers (the engine itself accepts any score up to 1000)."""

_HOKM_VARIANTS = {
    "4p": (hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 4),
    "3p": (hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, 3),
    "2p": (hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, 2),
}


@dataclass
class SimTally:
    """What a run of matches produced, per policy name."""

    games: int = 0
    events: int = 0
    commands: int = 0
    seconds: float = 0.0
    wins: Counter[str] = field(default_factory=Counter)
    seats: Counter[str] = field(default_factory=Counter)


def _server_seed(seed: int, game_index: int) -> bytes:
    return hashlib.sha256(f"dast/sim/{seed}/{game_index}".encode()).digest()


def _parse_bots(text: str, known: dict[str, Any]) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        raise typer.BadParameter(f"choose bots among {', '.join(sorted(known))}, got {text!r}")
    return names


def run_sim(
    game: Game,
    rules: Any,
    seats: int,
    bot_names: Sequence[str],
    bots: dict[str, Policy],
    games: int,
    seed: int,
    console: Console,
    export_dir: Path | None = None,
) -> SimTally:
    """Play ``games`` matches and tally wins per policy; write their logs to ``export_dir``."""
    tally = SimTally()
    if export_dir is not None:
        export_dir.mkdir(parents=True, exist_ok=True)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"{game.NAME} matches", total=games)
        for index in range(games):
            seating = [bot_names[(seat + index) % len(bot_names)] for seat in range(seats)]
            players = [
                common_pb2.Player(player_id=f"{name}-{seat}", display_name=name, is_bot=True)
                for seat, name in enumerate(seating)
            ]
            started = time.perf_counter()
            events = play_match(
                game,
                rules,
                _server_seed(seed, index),
                players,
                [bots[name] for name in seating],
                rng_seed=seed * 1_000_003 + index,
            )
            tally.seconds += time.perf_counter() - started
            if export_dir is not None:
                log_file = export_dir / f"{game.NAME}-{seed}-{index:05d}.jsonl"
                log_file.write_text(dump_jsonl(chain_log(events)), encoding="utf-8")
            tally.games += 1
            tally.events += len(events)
            tally.commands += sum(1 for e in events if game.command_for(e) is not None)
            winners = _winners(game, events)
            tally.wins.update({seating[seat] for seat in winners})
            tally.seats.update(set(seating))
            progress.advance(task)
    return tally


def _winners(game: Game, events: list[log_pb2.Event]) -> list[int]:
    final_view = game.view(game.replay(events), None)
    return list(getattr(final_view, "winners"))  # noqa: B009 - both views name it so


def _print_tally(console: Console, title: str, tally: SimTally) -> None:
    table = Table(title=title)
    table.add_column("bot")
    table.add_column("matches played", justify="right")
    table.add_column("matches won", justify="right")
    table.add_column("win rate", justify="right")
    for name in sorted(tally.seats):
        played, won = tally.seats[name], tally.wins[name]
        table.add_row(name, str(played), str(won), f"{won / played:.1%}" if played else "-")
    console.print(table)
    rate = tally.commands / tally.seconds if tally.seconds else 0.0
    console.print(
        f"{tally.games} matches, {tally.events} events, {tally.commands} moves "
        f"in {tally.seconds:.2f} s ({rate:,.0f} moves/s)"
    )


@app.command("hokm")
def sim_hokm(
    variant: str = typer.Option("4p", help="4p, 3p or 2p"),
    games: int = typer.Option(10, min=1, help="How many matches to play."),
    seed: int = typer.Option(0, help="Seed of the whole run (each match derives its own)."),
    bots: str = typer.Option("greedy,random", help="Policies, cycled over the seats."),
    target_score: int = typer.Option(7, help="3, 5, 7 or 10"),
    export: Path | None = typer.Option(
        None, help="Write each match's log (JSON Lines) into this folder."
    ),
) -> None:
    """Play Hokm matches between bots and print who won."""
    if variant not in _HOKM_VARIANTS:
        raise typer.BadParameter(f"--variant must be 4p, 3p or 2p, got {variant!r}")
    if target_score not in HOKM_TARGET_SCORES:
        choices = ", ".join(str(score) for score in HOKM_TARGET_SCORES)
        raise typer.BadParameter(f"--target-score must be one of {choices}, got {target_score}")
    proto_variant, seats = _HOKM_VARIANTS[variant]
    rules = hokm_pb2.HokmRules(variant=proto_variant, target_score=target_score)
    names = _parse_bots(bots, HOKM_BOTS)
    console = Console()
    tally = run_sim(hokm, rules, seats, names, dict(HOKM_BOTS), games, seed, console, export)
    _print_tally(console, f"Hokm {variant}, target {target_score}, seed {seed}", tally)


@app.command("hand")
def sim_hand(
    players: int = typer.Option(4, min=2, max=4, help="2, 3 or 4"),
    partnerships: bool = typer.Option(False, help="Two partnerships (4 players only)."),
    games: int = typer.Option(10, min=1, help="How many games to play."),
    seed: int = typer.Option(0, help="Seed of the whole run (each game derives its own)."),
    bots: str = typer.Option("greedy,random", help="Policies, cycled over the seats."),
    export: Path | None = typer.Option(
        None, help="Write each game's log (JSON Lines) into this folder."
    ),
) -> None:
    """Play Hand games between bots and print who won."""
    if partnerships and players != 4:
        raise typer.BadParameter("--partnerships needs --players 4")
    rules = hand_pb2.HandRules(players=players, partnerships=partnerships)
    names = _parse_bots(bots, HAND_BOTS)
    console = Console()
    tally = run_sim(hand, rules, players, names, dict(HAND_BOTS), games, seed, console, export)
    mode = "partnerships" if partnerships else f"{players} players"
    _print_tally(console, f"Hand, {mode}, seed {seed}", tally)
