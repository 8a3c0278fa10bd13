"""Who may create tournaments, and how many open ones a player may host: operator settings.

Every caller holds a token, so "anyone" cannot mean callers without one. The choices
(``DAST_TOURNAMENT_CREATORS``):

- ``anyone`` (the default): every player token, guests included (a guest is a player the
  lobby's ``SignInGuest`` made: :attr:`~services.platform.auth.Identity.is_guest`);
- ``accounts``: players signed in with an account, not guests;
- ``operators``: admin and service tokens only.

Operators (admin and service tokens) may always create, feature tournaments and host any
number. A player hosts at most ``open_per_player`` open tournaments (registering or running,
``DAST_TOURNAMENT_OPEN_PER_PLAYER``, 2 by default): past it a creation is refused with
RESOURCE_EXHAUSTED, reason ``too_many_open_tournaments``, until one of theirs finishes or
they cancel one (``CancelTournament``). The count is taken in the store, in the creating
transaction (:meth:`services.tournament.store.TournamentStore.create`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import grpc

from services.platform.auth import Identity
from services.platform.errors import ServiceError
from services.tournament.reasons import TournamentServiceReason

DEFAULT_OPEN_PER_PLAYER: Final = 2


class Creators(StrEnum):
    """Who may create tournaments."""

    ANYONE = "anyone"
    """Every player, guests included."""
    ACCOUNTS = "accounts"
    """Players signed in with an account (not guests)."""
    OPERATORS = "operators"
    """Admin and service tokens only."""


_REFUSALS: Final = {
    Creators.ACCOUNTS: "guests cannot create tournaments on this server: sign in with an "
                       "account",
    Creators.OPERATORS: "only operators create tournaments on this server",
}


@dataclass(frozen=True, slots=True)
class CreationPolicy:
    """The creation settings of one deployment."""

    creators: Creators = Creators.ANYONE
    open_per_player: int = DEFAULT_OPEN_PER_PLAYER

    def __post_init__(self) -> None:
        if self.open_per_player < 1:
            raise ValueError("open_per_player must be at least 1")

    def may_create(self, caller: Identity) -> bool:
        """Whether ``caller`` may create a tournament at all."""
        if caller.is_privileged or self.creators is Creators.ANYONE:
            return True
        return self.creators is Creators.ACCOUNTS and not caller.is_guest

    def check(self, caller: Identity) -> int | None:
        """The most open tournaments ``caller`` may host with the one they create (None: no
        limit, for operators).

        :raises ServiceError: PERMISSION_DENIED, reason ``tournament_creation_restricted``,
            for a caller the setting leaves out.
        """
        if not self.may_create(caller):
            raise ServiceError(grpc.StatusCode.PERMISSION_DENIED,
                               TournamentServiceReason.TOURNAMENT_CREATION_RESTRICTED,
                               _REFUSALS[self.creators],
                               metadata={"creators": str(self.creators)})
        return None if caller.is_privileged else self.open_per_player


def too_many_open(open_count: int, limit: int) -> ServiceError:
    """The refusal of a creation past the host's open tournaments."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, TournamentServiceReason.TOO_MANY_OPEN_TOURNAMENTS,
        f"you host {open_count} open tournaments, the most this server allows one player "
        f"({limit}): wait until one ends, or cancel one that has not started",
        metadata={"open": str(open_count), "limit": str(limit)})
