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

from engine.core.audit import Check, Finding
from engine.core.logformat import ExportedLog, LogFormatError, Receipt, load_log, load_receipts
from engine.core.seal import PUBLIC_KEY_BYTES, SealProblem
from engine.core.verification import Outcome, Verification, verify_export

UNREADABLE = 2
FAILED = 1
_MARKS = {Outcome.PASSED: "[green]ok[/green]", Outcome.FAILED: "[red]FAILED[/red]"}
_TRUSTED_KEY_NAME = "--public-key"


def hint(finding: Finding) -> str:
    """A finding as the command line says it, with what to pass when that is the fix."""
    if finding.code == SealProblem.MISSING:
        return f"{finding} (pass --unsealed to accept that)"
    return str(finding)


def public_key_option(value: str) -> bytes:
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


def read_receipts(paths: list[Path], console: Console) -> list[Receipt]:
    receipts: list[Receipt] = []
    for path in paths:
        try:
            receipts.extend(load_receipts(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, LogFormatError) as error:
            console.print(f"[red]cannot read receipts {escape(str(path))}:[/red] {error}")
            raise typer.Exit(UNREADABLE) from error
    return receipts



def read_export(path: Path, console: Console) -> ExportedLog:
    """The exported log in ``path``; exits with 2 when it cannot be read."""
    try:
        return load_log(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, LogFormatError) as error:
        console.print(f"[red]cannot read {escape(str(path))}:[/red] {error}")
        raise typer.Exit(UNREADABLE) from error


def verify_file(
    path: Path, console: Console, *, public_key: str | None, receipts: list[Path],
    unsealed: bool,
) -> Verification:
    """Every check on the export in ``path`` (the options as ``dast verify`` takes them)."""
    trusted_key = public_key_option(public_key) if public_key is not None else None
    exported = read_export(path, console)
    seat_receipts = read_receipts(receipts, console)
    return verify_export(
        exported.entries, exported.seal, trusted_key=trusted_key,
        trusted_key_name=_TRUSTED_KEY_NAME, receipts=seat_receipts, accept_unsealed=unsealed,
    )


def warnings_of(verification: Verification) -> list[str]:
    """The verification's warnings as the command line says them."""
    return [f"{warning} or pass --public-key" if "taken from the file itself" in warning
            else warning for warning in verification.warnings]


PublicKeyOption = Annotated[
    str | None,
    typer.Option(help="The server's public key (base64, or a file holding it), as "
                      "GameService.GetSigningKey serves it."),
]
ReceiptsOption = Annotated[
    list[Path] | None,
    typer.Option(help="A seat's saved receipts (JSON Lines of {seq, hash} or of "
                      "SubscribeResponse); repeatable."),
]
UnsealedOption = Annotated[
    bool, typer.Option(help="Accept a log without a seal (dast sim, older exports).")
]
"""The options ``dast verify`` and ``dast audit`` share."""


def verify(
    log_file: Annotated[Path, typer.Argument(help="An exported log: JSON Lines of LogEntry.")],
    public_key: PublicKeyOption = None,
    receipts: ReceiptsOption = None,
    unsealed: UnsealedOption = False,
) -> None:
    """Verify a finished game's log: hash chain, seed commitment, every deal and move, the
    server's seal and any seat's receipts."""
    console = Console(soft_wrap=True)  # a line per check or problem, whatever the width
    result = verify_file(log_file, console, public_key=public_key, receipts=receipts or [],
                         unsealed=unsealed)
    console.print(f"{escape(str(log_file))}: {result.events} events")
    for check in (Check.CHAIN, Check.COMMITMENT, Check.DEALS):
        console.print(f"  {check:<16} {_MARKS.get(result.outcomes[check], _MARKS[Outcome.FAILED])}")
    if result.outcomes[Check.SEAL] is Outcome.SKIPPED:
        console.print("  seal             [yellow]absent (accepted: --unsealed)[/yellow]")
    else:
        console.print(f"  seal             {_MARKS[result.outcomes[Check.SEAL]]}")
    if receipts:
        console.print(f"  receipts         {_MARKS[result.outcomes[Check.RECEIPTS]]} "
                      f"({result.receipts_matched} of {result.receipts_checked} match)")
    for warning in warnings_of(result):
        console.print(f"  [yellow]warning: {escape(warning)}[/yellow]")
    for finding in result.findings:
        console.print(f"  [red]- {escape(hint(finding))}[/red]")
    if not result.ok:
        raise typer.Exit(FAILED)
    console.print("[green]verified[/green]")
