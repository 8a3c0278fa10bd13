"""structlog configuration: one JSON object per line, with context such as game_id and seq.

Handlers bind the game and seq they work on (``log.bind(game_id=..., seq=...)``), so every
line about a command says which game and which position in its log it concerns.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "info", *, json: bool = True) -> None:
    """Send structlog (and stdlib logging) lines to stderr at ``level``."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(name)s %(message)s")


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A logger bound to the component ``name``."""
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(component=name)
    return logger
