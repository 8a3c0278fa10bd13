"""The names entrants are shown under: kept beside a tournament's log, never in it.

A tournament's log is chained and cannot change, and a player who deletes their account
takes their name with them; so the engine's commands and events carry no name (their
``name`` fields stay empty) and the service keeps the name each player registered under
(or a bot entrant was given) in the store's ``tournament_names``, written with the step
that registered it. The entrants, the standings and the names given to each table's match
read it back (:func:`entrant_name`); an erasure blanks the player's names and marks them
deleted. A tournament stored before names left the logs has no names kept: its entrants
show what its log recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine import tournament as engine
from services.tournament.store import KeptName


@dataclass(frozen=True, slots=True)
class Shown:
    """How an entrant is shown."""

    display_name: str
    deleted: bool = False
    """A member deleted their account: shown as a deleted player, nameless."""


def entrant_name(entrant: engine.Entrant, names: Mapping[str, KeptName]) -> Shown:
    """How ``entrant`` is shown: its kept name (a pair's, the name its last member to ask
    gave, else the first's, as the engine named pairs), else what an older log recorded,
    else its id; nameless and deleted when a member's account was deleted."""
    keys = (entrant.entrant_id, *reversed(entrant.members))
    kept = [names[key] for key in keys if key in names]
    if any(name.deleted for name in kept):
        return Shown("", deleted=True)
    named = next((name.display_name for name in kept if name.display_name), "")
    return Shown(named or entrant.name or entrant.entrant_id)
