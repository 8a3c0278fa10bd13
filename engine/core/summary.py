"""A view's :class:`~engine.core.protocol.ViewSummary` from the fields views share.

Hokm's and Hand's views (and the tests' tiny game's) spell the seat-level facts alike:
``is_spectator``, ``seat``, ``players``, ``turn`` (proto3 ``optional``: unset when nobody
is to act) and ``legal``. A game whose
view does so summarizes it with :func:`summary_of`, adding only whether its phase is over.
"""

from __future__ import annotations

from typing import Any

from engine.core.protocol import ViewSummary


def summary_of(view: Any, *, is_over: bool) -> ViewSummary:
    """The summary of ``view`` (a view message with the shared fields above)."""
    return ViewSummary(
        seat=None if view.is_spectator else int(view.seat),
        turn=int(view.turn) if view.HasField("turn") else None,
        is_over=is_over,
        can_act=bool(view.legal) and not view.is_spectator,
        players=tuple(view.players),
    )
