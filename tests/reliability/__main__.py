"""``python -m tests.reliability``: run the reliability suite and write its report.

``make reliability`` runs the long version (faults drawn for ten minutes); ``make test``
runs the short one through ``tests/reliability/test_short_run.py`` (each fault once).
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tests.reliability.report import render
from tests.reliability.run import RunOptions, run_suite

app = typer.Typer(add_completion=False)


@app.command()
def main(
    matches: Annotated[int, typer.Option(help="Bot matches (every variant in turn).")] = 14,
    streams: Annotated[int, typer.Option(help="Idle watcher streams.")] = 200,
    hostile_calls: Annotated[int, typer.Option(help="Hostile requests.")] = 2000,
    duration: Annotated[float, typer.Option(
        help="Seconds of faults; 0: each kind of fault once.")] = 600,
    seed: Annotated[int, typer.Option(help="Seed of the fault plan and the fuzzing.")] = 1,
    report: Annotated[Path, typer.Option(help="Where to write the report.")] = Path(
        "docs/reliability.md"),
) -> None:
    """Load the whole system, break it, and report what held (exit 1 when something didn't)."""
    console = Console()
    options = RunOptions(matches=matches, streams=streams, hostile_calls=hostile_calls,
                         duration_s=duration, seed=seed)
    with tempfile.TemporaryDirectory(prefix="dast-reliability-") as work, \
            console.status("reliability run") as status:
        def progress(line: str) -> None:
            console.log(line)
            status.update(line)

        result = asyncio.run(run_suite(options, Path(work), progress))
    command = "python -m tests.reliability " + shlex.join(sys.argv[1:])
    report.write_text(render(result, command.strip()), encoding="utf-8")
    console.print(f"report written to {report}")
    for problem in result.problems:
        console.print(f"[red]problem:[/red] {problem}")
    raise typer.Exit(0 if result.held else 1)


if __name__ == "__main__":
    app()
