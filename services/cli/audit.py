"""``dast audit GAME_ID|FILE``: every check of ``dast verify``, and what failed and where.

- ``FILE`` (an exported log, JSON Lines): the checks run on this machine, the same code as
  ``dast verify`` (:func:`engine.core.verification.verify_export`), with the same options
  (``--public-key``, ``--receipts``, ``--unsealed``).
- ``GAME_ID``: the server runs them on its stored log (``AuditService.AuditGame``, with a
  bearer token: ``--token`` or ``DAST_TOKEN``) against the receipts given. A server's word
  about itself is worth less than a check of your own: ``dast export`` and ``dast verify``
  do that.

``dast audit --admin-log`` checks the operators' action log instead
(:mod:`services.cli.audit_admin`).

Either way the result is one table of the checks and one of the findings: the check, the
event's seq, what failed in plain words, what was expected there and what the log holds.
Exit codes as ``dast verify``: 0 every check passed; 1 a check failed; 2 an input could not
be read (or the server could not be asked).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Annotated, Final

import grpc
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dast.v1 import audit_pb2, audit_pb2_grpc
from engine.core.logformat import Receipt
from engine.core.verification import CHECK_OF_MESSAGE, OUTCOME_OF_MESSAGE, Outcome, report_message
from services.cli.audit_admin import audit_admin_log
from services.cli.verify import (
    FAILED,
    UNREADABLE,
    PublicKeyOption,
    ReceiptsOption,
    UnsealedOption,
    read_receipts,
    verify_file,
    warnings_of,
)

_GAME_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_RESULTS: Final = {
    Outcome.PASSED: "[green]ok[/green]",
    Outcome.FAILED: "[red]FAILED[/red]",
    Outcome.SKIPPED: "[yellow]skipped[/yellow]",
}
_HINTS: Final = {
    "seal_missing": "pass --unsealed to accept a log without a seal",
    "seal_untrusted_key": "check the key: dast signing-key prints the server's",
}
"""What to do about a finding of a file, by code (a server's report has no options)."""


def render(report: audit_pb2.AuditReport, source: str, console: Console, *,
           hints: bool, warnings: list[str] | None = None) -> None:
    """Print an audit report: the checks, the findings, the warnings and the verdict."""
    console.print(f"[bold]{escape(source)}[/bold]: {report.events} events")
    checks = Table(show_header=True, header_style="bold")
    checks.add_column("check")
    checks.add_column("result")
    checks.add_column("details")
    for result in report.checks:
        outcome = OUTCOME_OF_MESSAGE.get(result.outcome, Outcome.FAILED)
        checks.add_row(str(CHECK_OF_MESSAGE.get(result.check, "?")), _RESULTS[outcome],
                       escape(result.summary))
    console.print(checks)
    if report.findings:
        # A list, not a table: the sentences stay whole on a narrow terminal.
        console.print("[bold red]What failed, and where[/bold red]")
        for finding in report.findings:
            message = finding.message
            if hints and finding.code in _HINTS:
                message = f"{message} ({_HINTS[finding.code]})"
            where = f", seq {finding.seq}" if finding.HasField("seq") else ""
            console.print(f"  [red]x[/red] [bold]{CHECK_OF_MESSAGE.get(finding.check, '?')}"
                          f"{where}[/bold] [dim]({escape(finding.code)})[/dim]: "
                          f"{escape(message)}")
            if finding.expected or finding.found:
                console.print(f"      expected: {escape(finding.expected or '-')}")
                console.print(f"      found:    {escape(finding.found or '-')}")
    for warning in warnings if warnings is not None else list(report.warnings):
        console.print(f"[yellow]warning: {escape(warning)}[/yellow]")
    if report.verified:
        console.print("[green]verified[/green]")
    else:
        console.print(f"[red]NOT verified: {len(report.findings)} "
                      f"problem{'s' if len(report.findings) != 1 else ''}[/red]")


async def _audit_game(server: str, token: str, request: audit_pb2.AuditGameRequest
                      ) -> audit_pb2.AuditGameResponse:
    async with grpc.aio.insecure_channel(server) as channel:
        stub = audit_pb2_grpc.AuditServiceStub(channel)
        reply: audit_pb2.AuditGameResponse = await stub.AuditGame(
            request, metadata=(("authorization", f"Bearer {token}"),), timeout=60,
        )
        return reply


def _receipt_messages(receipts: list[Receipt]) -> list[audit_pb2.SeatReceipt]:
    return [audit_pb2.SeatReceipt(seq=r.seq, hash=r.hash) for r in receipts]


def audit(
    target: Annotated[str, typer.Argument(
        help="An exported log file (JSON Lines), or the id of a game the server stores.")
    ] = "",
    public_key: PublicKeyOption = None,
    receipts: ReceiptsOption = None,
    unsealed: UnsealedOption = False,
    token: Annotated[
        str, typer.Option(envvar="DAST_TOKEN", help="GAME_ID: bearer token (or DAST_TOKEN).")
    ] = "",
    server: Annotated[str, typer.Option(help="GAME_ID: host:port of the dast server.")
                      ] = "127.0.0.1:50051",
    admin_log: Annotated[bool, typer.Option(
        "--admin-log", help="Check the operators' action log instead (an admin --token).")
    ] = False,
    since: Annotated[str, typer.Option(
        help="--admin-log: the head SEQ:HASH an earlier check printed, to start from.")
    ] = "",
) -> None:
    """Audit a finished game, stored on the server or exported to a file: the hash chain,
    the seed commitment, every deal and move, the seal and any seat's receipts, saying in
    plain words what failed and where. With --admin-log, check the chain of the operators'
    action log."""
    console = Console(soft_wrap=True)
    if admin_log:
        if not token:
            console.print("[red]the action log needs an admin token[/red] (--token or "
                          "DAST_TOKEN)")
            raise typer.Exit(UNREADABLE)
        code = audit_admin_log(server, token, since, console)
        if code:
            raise typer.Exit(code)
        return
    path = Path(target).expanduser()
    if path.is_file():
        verification = verify_file(path, console, public_key=public_key,
                                   receipts=receipts or [], unsealed=unsealed)
        render(report_message(verification), str(path), console, hints=True,
               warnings=warnings_of(verification))
        if not verification.ok:
            raise typer.Exit(FAILED)
        return
    if not _GAME_ID.fullmatch(target):
        console.print(f"[red]no file {escape(target)}, and not a game id[/red] (game ids are "
                      "1 to 64 letters, digits, '-' or '_')")
        raise typer.Exit(UNREADABLE)
    if not token:
        console.print("[red]auditing a stored game needs a bearer token[/red] (--token or "
                      "DAST_TOKEN; dast export and dast verify need the same)")
        raise typer.Exit(UNREADABLE)
    request = audit_pb2.AuditGameRequest(
        game_id=target, receipts=_receipt_messages(read_receipts(receipts or [], console)),
    )
    try:
        reply = asyncio.run(_audit_game(server, token, request))
    except grpc.aio.AioRpcError as error:
        console.print(f"[red]AuditGame failed: {error.code().name}:[/red] "
                      f"{escape(error.details() or '')}")
        raise typer.Exit(UNREADABLE) from error
    render(reply.report, f"game {target} (audited by {server})", console, hints=False)
    if not reply.report.verified:
        raise typer.Exit(FAILED)
