"""The ``dast`` command line: one typer app; each sub-command lives in its own module."""

from __future__ import annotations

import typer

from services.cli import arena, audit, export, play, serve, sim, verify

app = typer.Typer(
    name="dast",
    help="dast: the open backend for Hokm and Hand.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(sim.app, name="sim")
app.add_typer(arena.app, name="arena")
app.command("verify")(verify.verify)
app.command("audit")(audit.audit)
app.command("export")(export.export)
app.command("signing-key")(export.signing_key)
app.command("serve")(serve.serve)
app.command("token")(serve.token)
app.command("play")(play.play)


def main() -> None:
    """Entry point of the ``dast`` console script."""
    app()
