"""``dast verify FILE``: check an exported log's hash chain, seed commitment and deals."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from engine.core.audit import audit_log
from engine.core.logformat import LogFormatError, load_jsonl


def verify(
    log_file: Path = typer.Argument(..., help="An exported log: JSON Lines of LogEntry."),
) -> None:
    """Verify a finished game's log: hash chain, server-seed commitment, every deal and move."""
    console = Console()
    try:
        entries = load_jsonl(log_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, LogFormatError) as error:
        console.print(f"[red]cannot read {log_file}:[/red] {error}")
        raise typer.Exit(2) from error
    report = audit_log(entries)
    marks = {True: "[green]ok[/green]", False: "[red]FAILED[/red]"}
    console.print(f"{log_file}: {report.events} events")
    console.print(f"  hash chain       {marks[report.chain_ok]}")
    console.print(f"  seed commitment  {marks[report.commitment_ok]}")
    console.print(f"  deals and moves  {marks[report.deals_ok]}")
    for problem in report.problems:
        console.print(f"  [red]- {problem}[/red]")
    if not report.ok:
        raise typer.Exit(1)
    console.print("[green]verified[/green]")
