"""The ``dast`` command line: one typer app; each sub-command lives in its own module."""

from __future__ import annotations

import typer

from services.cli import play, serve, sim, verify

app = typer.Typer(
    name="dast",
    help="dast: the open backend for Hokm and Hand.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(sim.app, name="sim")
app.command("verify")(verify.verify)
app.command("serve")(serve.serve)
app.command("token")(serve.token)
app.command("play")(play.play)


def main() -> None:
    """Entry point of the ``dast`` console script."""
    app()
