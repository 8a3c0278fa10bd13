"""``python -m services.cli.play``: the terminal client without the ``dast`` entry point."""

from __future__ import annotations

import typer

from services.cli.play import play

if __name__ == "__main__":
    typer.run(play)
