"""``dast arena``: two bot levels play many seeded matches in duplicate format.

Luck of the deal is cancelled by playing each deal (one server seed) once per seating of
the two levels (:func:`seatings`): with an even number of seats A and B alternate and then
swap; with three seats one level plays alone against two of the other, in each seat, and
then the other way round. A *set* is one deal played in every seating; ``--games`` counts
sets. Every match is a whole match through the engine
(:func:`engine.core.testing.play_match`), each seat seeing only its own view.

Printed and written (JSON, and an SVG chart beside it): A's match win rate with its 95 %
Wilson interval and the even share (1/2: every seating is played both ways round; with
three seats two defenders may win together, which lifts both levels a little above it),
points per match of each level (Hokm: match score; Hand: penalty totals, lower is better,
with the mean difference and its 95 % interval), and per level decisions per second and
milliseconds per decision (p50, p95, max). ``expert`` levels get ``--budget-ms`` a move
on a wall clock (0: ``--samples`` sampled deals instead, reproducible). ``--jobs`` plays
sets in parallel processes. Every finished set is journaled beside the results at once,
and ``--resume`` continues an interrupted run from its journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import multiprocessing
import signal
import statistics
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dast.v1 import common_pb2, hand_pb2, hokm_pb2
from engine import hand, hokm
from engine.core.budget import Budget
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom
from engine.core.testing import Policy, play_match
from engine.hand import expert as hand_expert
from engine.hand.bots import BOTS as HAND_BOTS
from engine.hokm import expert as hokm_expert
from engine.hokm.bots import BOTS as HOKM_BOTS
from services.cli.arena_chart import render_svg
from services.cli.arena_journal import (
    JournalMismatch,
    JournalWriter,
    journal_path,
    read_journal,
)
from services.cli.arena_records import ArenaSetup, MatchResult, SetResult

app = typer.Typer(help="Two bot levels play seeded duplicate matches.", no_args_is_help=True)

LEVELS: dict[str, tuple[str, ...]] = {
    "hokm": (*HOKM_BOTS, "expert"),
    "hand": (*HAND_BOTS, "expert"),
}
_HOKM_VARIANTS = {
    "4p": (hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 4),
    "3p": (hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, 3),
    "2p": (hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, 2),
}
_Z95 = 1.959964
_SAMPLE_CAP = 100_000
"""With a time budget, the sample cap is never the limit that binds."""


def seatings(seats: int) -> list[tuple[str, ...]]:
    """Every seating of one duplicate set, as ``"a"``/``"b"`` per seat: with an even
    number of seats the two levels alternate, then swap; with three, one level alone
    against two of the other in each seat, then the other way round, so that each level
    holds every seat, alone and paired, equally often.

    >>> seatings(4)
    [('a', 'b', 'a', 'b'), ('b', 'a', 'b', 'a')]
    >>> seatings(3)[:3]
    [('a', 'b', 'b'), ('b', 'a', 'b'), ('b', 'b', 'a')]
    """
    if seats % 2 == 0:
        first = tuple("ab"[seat % 2] for seat in range(seats))
        return [first, tuple("b" if side == "a" else "a" for side in first)]
    return [tuple(alone if seat == index else paired for seat in range(seats))
            for alone, paired in (("a", "b"), ("b", "a")) for index in range(seats)]


def wilson(successes: int, trials: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default).

    >>> low, high = wilson(80, 100)
    >>> round(low, 3), round(high, 3)
    (0.711, 0.867)
    """
    if trials == 0:
        return 0.0, 1.0
    rate = successes / trials
    scale = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / scale
    half = z / scale * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of already sorted values (0 when there are none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _game(name: str) -> Game:
    return hokm if name == "hokm" else hand


def _rules(setup: ArenaSetup) -> Any:
    message = hokm_pb2.HokmRules() if setup.game == "hokm" else hand_pb2.HandRules()
    message.ParseFromString(setup.rules)
    return message


def level_policy(game: str, level: str, budget_ms: float, samples: int) -> Policy:
    """The policy of ``level``; an ``expert`` gets ``budget_ms`` a move on
    ``time.perf_counter`` (with 0, ``samples`` per move and no clock)."""
    if level != "expert":
        return (HOKM_BOTS if game == "hokm" else HAND_BOTS)[level]
    timed = budget_ms > 0
    budget = Budget(_SAMPLE_CAP, budget_ms, time.perf_counter) if timed else Budget(samples)
    maker = hokm_expert.make_expert if game == "hokm" else hand_expert.make_expert
    return maker(budget)


def _timed(policy: Policy, sink: list[float]) -> Policy:
    def timed(view: Any, rng: DeterministicRandom) -> Any:
        started = time.perf_counter()
        command = policy(view, rng)
        sink.append((time.perf_counter() - started) * 1000.0)
        return command

    return timed


def play_set(setup: ArenaSetup, index: int) -> SetResult:
    """Play deal ``index`` in every seating (the unit of work of a run)."""
    game = _game(setup.game)
    rules = _rules(setup)
    seed = hashlib.sha256(f"dast/arena/{setup.seed}/{index}".encode()).digest()
    levels = {"a": setup.level_a, "b": setup.level_b}
    result = SetResult(index, [], {"a": [], "b": []})
    for seating in seatings(setup.seats):
        policies = {
            side: _timed(level_policy(setup.game, levels[side], setup.budget_ms,
                                      setup.samples), result.decision_ms[side])
            for side in ("a", "b")
        }
        players = [common_pb2.Player(player_id=f"{levels[side]}-{seat}", is_bot=True)
                   for seat, side in enumerate(seating)]
        events = play_match(game, rules, seed, players, [policies[s] for s in seating],
                            rng_seed=f"arena/{setup.seed}/{index}".encode())
        final: Any = game.view(game.replay(events), None)
        winners = set(final.winners)
        points = list(final.scores if setup.game == "hokm" else final.totals)
        a_seats = [seat for seat, side in enumerate(seating) if side == "a"]
        b_seats = [seat for seat, side in enumerate(seating) if side == "b"]
        result.matches.append(MatchResult(
            seating=seating,
            a_won=any(seat in winners for seat in a_seats),
            b_won=any(seat in winners for seat in b_seats),
            a_points=statistics.fmean(points[seat] for seat in a_seats),
            b_points=statistics.fmean(points[seat] for seat in b_seats),
        ))
    return result


def _play_set_job(job: tuple[ArenaSetup, int]) -> SetResult:
    return play_set(*job)


def run_sets(setup: ArenaSetup, indices: Sequence[int], jobs: int) -> Iterator[SetResult]:
    """The sets of ``indices``, in completion order (in parallel processes with ``jobs`` > 1)."""
    work = [(setup, index) for index in indices]
    if jobs <= 1:
        yield from map(_play_set_job, work)
        return
    with _exit_on_sigterm(), multiprocessing.get_context("spawn").Pool(jobs) as pool:
        yield from pool.imap_unordered(_play_set_job, work)


@contextlib.contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """While the pool runs, SIGTERM exits through Python, so that leaving the pool's block
    terminates its workers: Python's own default ends the process at once, and orphaned
    workers would play their sets on, holding the cores for minutes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(signum: int, frame: FrameType | None) -> None:
        sys.exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def summarize(setup: ArenaSetup, sets: Sequence[SetResult], seconds: float) -> dict[str, Any]:
    """The run's figures (what is printed and written as JSON)."""
    ordered = sorted(sets, key=lambda s: s.index)
    matches = [match for s in ordered for match in s.matches]
    wins = sum(match.a_won for match in matches)
    low, high = wilson(wins, len(matches))
    differences = [match.a_points - match.b_points for match in matches]
    mean_difference = statistics.fmean(differences) if differences else 0.0
    spread = statistics.stdev(differences) if len(differences) > 1 else 0.0
    margin = _Z95 * spread / math.sqrt(len(differences)) if differences else 0.0
    levels: dict[str, Any] = {}
    for side, level in (("a", setup.level_a), ("b", setup.level_b)):
        times = sorted(ms for s in ordered for ms in s.decision_ms[side])
        total_s = sum(times) / 1000.0
        levels[side] = {
            "level": level,
            "matches_won": sum(getattr(match, f"{side}_won") for match in matches),
            "points_per_match": statistics.fmean(
                getattr(match, f"{side}_points") for match in matches
            ) if matches else 0.0,
            "decisions": len(times),
            "decisions_per_s": len(times) / total_s if total_s else 0.0,
            "ms_p50": percentile(times, 0.50),
            "ms_p95": percentile(times, 0.95),
            "ms_max": times[-1] if times else 0.0,
        }
    running: list[tuple[float, float, float]] = []
    won = 0
    for count, match in enumerate(matches, start=1):
        won += match.a_won
        running.append((won / count, *wilson(won, count)))
    return {
        "setup": {key: value for key, value in asdict(setup).items() if key != "rules"},
        "sets": len(ordered),
        "matches": len(matches),
        "seconds": seconds,
        "a_win_rate": wins / len(matches) if matches else 0.0,
        "a_win_rate_ci95": [low, high],
        "even_share": 1 / 2,
        "points_difference_mean": mean_difference,
        "points_difference_ci95": [mean_difference - margin, mean_difference + margin],
        "levels": levels,
        "running": running,
    }


def _print(console: Console, title: str, summary: dict[str, Any], game: str) -> None:
    table = Table(title=title)
    for column in ("side", "level", "won", "pts/match", "dec/s", "ms p50", "ms p95",
                   "ms max"):
        table.add_column(column, justify="left" if column in ("side", "level") else "right")
    for side, figures in summary["levels"].items():
        table.add_row(side.upper(), figures["level"], str(figures["matches_won"]),
                      f"{figures['points_per_match']:.2f}", f"{figures['decisions_per_s']:,.0f}",
                      f"{figures['ms_p50']:.1f}", f"{figures['ms_p95']:.1f}",
                      f"{figures['ms_max']:.1f}")
    console.print(table)
    low, high = summary["a_win_rate_ci95"]
    console.print(
        f"A wins {summary['a_win_rate']:.3f} of {summary['matches']} matches "
        f"(95 % CI {low:.3f}–{high:.3f}; even share {summary['even_share']:.3f})"
    )
    low, high = summary["points_difference_ci95"]
    what = "penalty (lower is better)" if game == "hand" else "points"
    console.print(f"A − B {what} per match: {summary['points_difference_mean']:+.2f} "
                  f"(95 % CI {low:+.2f} to {high:+.2f}); {summary['seconds']:.1f} s")


def run_arena(setup: ArenaSetup, games: int, jobs: int, out: Path, console: Console,
              *, resume: bool = False) -> dict[str, Any]:
    """Play a whole run with a progress bar, print it, write ``out`` (JSON) and the SVG
    chart beside it (same name, ``.svg``).

    Every finished set goes to the run's journal at once (:mod:`services.cli.arena_journal`);
    with ``resume`` the sets an earlier run of the same setup journaled are kept and only the
    others are played.

    :raises JournalMismatch: if ``resume`` finds a journal of another setup.
    """
    journal = journal_path(out)
    done, earlier_s = read_journal(journal, setup) if resume else ([], 0.0)
    sets = [result for result in done if result.index < games]
    missing = sorted(set(range(games)) - {result.index for result in sets})
    if sets:
        console.print(f"resuming: {len(sets)} of {games} sets from {journal}")
    writer = JournalWriter(journal, setup, append=bool(done))
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    # Without a terminal (a run logged to a file) the bar does not draw: a line every
    # twentieth of the run says how far it got instead.
    every = max(1, games // 20)
    started = time.perf_counter()
    try:
        with Progress(*columns, console=console) as progress:
            task = progress.add_task(f"{setup.level_a} vs {setup.level_b}", total=games,
                                     completed=len(sets))
            for result in run_sets(setup, missing, jobs):
                sets.append(result)
                elapsed = earlier_s + time.perf_counter() - started
                writer.record(result, elapsed)
                progress.advance(task)
                if not console.is_terminal and (len(sets) % every == 0 or len(sets) == games):
                    console.print(f"{len(sets)}/{games} sets, {elapsed:,.0f} s")
    finally:
        writer.close()
    summary = summarize(setup, sets, earlier_s + time.perf_counter() - started)
    summary["resumed_sets"] = len(sets) - len(missing)
    title = f"{setup.game} {setup.level_a} (A) vs {setup.level_b} (B), seed {setup.seed}"
    _print(console, title, summary, setup.game)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    timings = {f"{figures['level']} ({side.upper()})": (
        figures["ms_p50"], figures["ms_p95"], figures["ms_max"])
        for side, figures in summary["levels"].items()}
    chart = out.with_suffix(".svg")
    chart.write_text(render_svg(title, summary["running"], summary["even_share"], timings))
    console.print(f"wrote {out} and {chart}")
    return summary


def _run(setup: ArenaSetup, games: int, jobs: int, out: Path, resume: bool) -> None:
    try:
        run_arena(setup, games, jobs, out, Console(), resume=resume)
    except JournalMismatch as mismatch:
        raise typer.BadParameter(str(mismatch), param_hint="--resume") from None


def _check_level(game: str, level: str) -> str:
    if level not in LEVELS[game]:
        raise typer.BadParameter(f"choose a level among {', '.join(LEVELS[game])}, got {level!r}")
    return level


_A = typer.Option("expert", "--a", help="Level A (the one whose win rate is reported).")
_GAMES = typer.Option(50, min=1, help="Deals; each is played in every seating.")
_SEED = typer.Option(0, help="Seed of the whole run (each deal derives its own).")
_BUDGET = typer.Option(200.0, min=0, help="An expert's time per move, ms (0: --samples).")
_SAMPLES = typer.Option(48, min=1, help="An expert's samples per move when --budget-ms 0.")
_JOBS = typer.Option(1, min=1, help="Parallel processes.")
_RESUME = typer.Option(
    False, "--resume",
    help="Keep the sets an interrupted run of the same setup journaled beside --out "
         "(<out>.sets.jsonl) and play only the others.",
)


_OUT_HELP = "JSON results (the SVG chart goes beside it)."
_HOKM_OUT = typer.Option(Path("arena/hokm.json"), help=_OUT_HELP)
_HAND_OUT = typer.Option(Path("arena/hand.json"), help=_OUT_HELP)


@app.command("hokm")
def arena_hokm(
    a: str = _A,
    b: str = typer.Option("greedy", "--b", help="Level B."),
    variant: str = typer.Option("4p", help="4p, 3p or 2p"),
    games: int = _GAMES,
    seed: int = _SEED,
    budget_ms: float = _BUDGET,
    samples: int = _SAMPLES,
    target_score: int = typer.Option(7, min=1, max=1000, help="Points that win a match."),
    jobs: int = _JOBS,
    out: Path = _HOKM_OUT,
    resume: bool = _RESUME,
) -> None:
    """Hokm: level A against level B over duplicate deals."""
    if variant not in _HOKM_VARIANTS:
        raise typer.BadParameter(f"--variant must be 4p, 3p or 2p, got {variant!r}")
    proto_variant, seats = _HOKM_VARIANTS[variant]
    rules = hokm_pb2.HokmRules(variant=proto_variant, target_score=target_score, turn_seconds=0)
    setup = ArenaSetup("hokm", rules.SerializeToString(), seats, _check_level("hokm", a),
                       _check_level("hokm", b), budget_ms, samples, seed)
    _run(setup, games, jobs, out, resume)


@app.command("hand")
def arena_hand(
    a: str = _A,
    b: str = typer.Option("basic", "--b", help="Level B."),
    players: int = typer.Option(2, min=2, max=4, help="2, 3 or 4"),
    games: int = _GAMES,
    seed: int = _SEED,
    budget_ms: float = _BUDGET,
    samples: int = typer.Option(hand_expert.DEFAULT_SAMPLES, min=1,
                                help="An expert's samples per move when --budget-ms 0."),
    rounds: int = typer.Option(5, min=1, help="Rounds in a match."),
    jobs: int = _JOBS,
    out: Path = _HAND_OUT,
    resume: bool = _RESUME,
) -> None:
    """Hand: level A against level B over duplicate deals (penalties: lower is better)."""
    rules = hand_pb2.HandRules(players=players, rounds=rounds, turn_seconds=0)
    setup = ArenaSetup("hand", rules.SerializeToString(), players, _check_level("hand", a),
                       _check_level("hand", b), budget_ms, samples, seed)
    _run(setup, games, jobs, out, resume)

