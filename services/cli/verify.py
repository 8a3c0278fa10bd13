"""``dast verify FILE``: check an exported log from its first event to the server's seal.

Checks, each printed on its own line:

- hash chain: every hash follows from the events and the revealed seed;
- seed commitment: the revealed server seed is the one committed to before the first deal;
- deals and moves: re-running the match from its setup gives every event, byte for byte;
- seal: the server's Ed25519 signature over the last hash (against ``--public-key`` when
  given: a key read from the file itself only shows that whoever made the file signed it);
- receipts (``--receipts FILE``, repeatable): the log holds every hash a seat was sent
  during the match (:mod:`engine.core.logformat` describes the file).

Exit codes: 0 every check passed; 1 a check failed; 2 an input could not be read.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from engine.core.audit import audit_log, check_receipts
from engine.core.logformat import LogFormatError, Receipt, load_log, load_receipts
from engine.core.seal import PUBLIC_KEY_BYTES, SealProblem, seal_covers, verify_seal

_UNREADABLE = 2
_FAILED = 1
_MARKS = {True: "[green]ok[/green]", False: "[red]FAILED[/red]"}
_SEAL_PROBLEMS = {
    SealProblem.MISSING: "the log carries no seal (pass --unsealed to accept that)",
    SealProblem.MALFORMED: "the seal's key or signature has the wrong length",
    SealProblem.BAD_SIGNATURE: "the seal's signature does not match the log's head",
    SealProblem.WRONG_HEAD: "the seal names another seq or hash than the log's last entry",
    SealProblem.UNTRUSTED_KEY: "the seal was made with another key than --public-key",
}


def _public_key(value: str) -> bytes:
    """The raw key ``--public-key`` names: base64 of 32 bytes, or a file holding that.

    :raises typer.BadParameter: when it is neither.
    """
    path = Path(value).expanduser()
    text = path.read_text(encoding="utf-8").strip() if path.is_file() else value.strip()
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise typer.BadParameter("not base64 (nor a file holding base64)") from error
    if len(key) != PUBLIC_KEY_BYTES:
        raise typer.BadParameter(f"{len(key)} bytes; an Ed25519 public key has 32")
    return key


def _read_receipts(paths: list[Path], console: Console) -> list[Receipt]:
    receipts: list[Receipt] = []
    for path in paths:
        try:
            receipts.extend(load_receipts(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, LogFormatError) as error:
            console.print(f"[red]cannot read receipts {escape(str(path))}:[/red] {error}")
            raise typer.Exit(_UNREADABLE) from error
    return receipts


def verify(
    log_file: Annotated[Path, typer.Argument(help="An exported log: JSON Lines of LogEntry.")],
    public_key: Annotated[
        str | None,
        typer.Option(help="The server's public key (base64, or a file holding it), as "
                          "GameService.GetSigningKey serves it."),
    ] = None,
    receipts: Annotated[
        list[Path] | None,
        typer.Option(help="A seat's saved receipts (JSON Lines of {seq, hash} or of "
                          "SubscribeResponse); repeatable."),
    ] = None,
    unsealed: Annotated[
        bool, typer.Option(help="Accept a log without a seal (dast sim, older exports).")
    ] = False,
) -> None:
    """Verify a finished game's log: hash chain, seed commitment, every deal and move, the
    server's seal and any seat's receipts."""
    console = Console(soft_wrap=True)  # a line per check or problem, whatever the width
    trusted_key = _public_key(public_key) if public_key is not None else None
    try:
        exported = load_log(log_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, LogFormatError) as error:
        console.print(f"[red]cannot read {escape(str(log_file))}:[/red] {error}")
        raise typer.Exit(_UNREADABLE) from error
    seat_receipts = _read_receipts(receipts or [], console)

    report = audit_log(exported.entries)
    problems = list(report.problems)
    console.print(f"{escape(str(log_file))}: {report.events} events")
    console.print(f"  hash chain       {_MARKS[report.chain_ok]}")
    console.print(f"  seed commitment  {_MARKS[report.commitment_ok]}")
    console.print(f"  deals and moves  {_MARKS[report.deals_ok]}")

    seal = exported.seal
    seal_problem: SealProblem | None
    if seal is None:
        seal_problem = None if unsealed else SealProblem.MISSING
    elif not seal_covers(seal, exported.entries):
        seal_problem = SealProblem.WRONG_HEAD
    else:
        seal_problem = verify_seal(seal, trusted_key)
    if seal is None and unsealed:
        console.print("  seal             [yellow]absent (accepted: --unsealed)[/yellow]")
    else:
        console.print(f"  seal             {_MARKS[seal_problem is None]}")
    if seal_problem is not None:
        problems.append(_SEAL_PROBLEMS[seal_problem])

    if receipts:
        receipt_problems = check_receipts(exported.entries, seat_receipts)
        matched = len(seat_receipts) - len(receipt_problems)
        console.print(f"  receipts         {_MARKS[not receipt_problems]} "
                      f"({matched} of {len(seat_receipts)} match)")
        problems.extend(receipt_problems)

    warnings = []
    if report.server_seed_chosen:
        warnings.append("an admin chose this match's server seed: the operator knew every "
                        "deal in advance")
    if seal is not None and trusted_key is None and seal_problem is None:
        key = base64.b64encode(seal.public_key).decode()
        warnings.append(f"sealed by key {key}, taken from the file itself: compare it with "
                        "the server's (GetSigningKey) or pass --public-key")
    for warning in warnings:
        console.print(f"  [yellow]warning: {escape(warning)}[/yellow]")
    for problem in problems:
        console.print(f"  [red]- {escape(problem)}[/red]")
    if problems or not report.ok:
        raise typer.Exit(_FAILED)
    console.print("[green]verified[/green]")
