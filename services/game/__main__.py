"""``python -m services.game``: run the services of ``DAST_SERVICES`` (default: game)."""

from services.game.runner import main

main()
