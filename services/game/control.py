"""Seat control through the game service: takeovers and returns appended to the game's log.

The rule is the engine's (:mod:`engine.core.control`); this module says who may ask and
runs the request through the command pipeline, so a change is chained, stored at the
expected seq and published like any move. Only service and admin tokens ask for a change
(``ControlSeat``); the one change a player causes is the return of their own seat, when
they open a stream again (:meth:`SeatControls.on_stream_opened`), recorded as requested by
that player. A request that changes nothing (the seat is already so controlled) appends
nothing; two replicas asking at once append one event, the loser of the store's
``(game_id, seq)`` race deciding again and finding nothing left to do.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import structlog

from dast.v1 import game_pb2, log_pb2
from engine.core.control import holders_of
from engine.core.errors import RuleViolation
from services.game.commands import CommandHandler, Outcome, Submission
from services.game.repository import GameSnapshot
from services.platform.auth import Identity
from services.platform.errors import Reason, ServiceError

_log = structlog.get_logger(component="seat-control")

BODY: str = "seat_control"
"""The member of ``Command`` carrying seat control (instead of a game's command)."""


def requester_of(identity: Identity) -> str:
    """How a seat-control event names who asked: ``<role>:<player id>``."""
    return f"{identity.role}:{identity.player_id}"


def seat_control_of(snapshot: GameSnapshot) -> list[log_pb2.SeatControl]:
    """Who controls each seat of ``snapshot``, in seat order (what views carry)."""
    return [holder.as_message(seat) for seat, holder in enumerate(holders_of(snapshot.state))]


def _command_id(seat: int, bot: bool, seq: int) -> str:
    """The id of a seat-control request: the same change asked again at the same seq by the
    same sender is one command."""
    return f"seat-control:{seat}:{'bot' if bot else 'player'}:{seq}"


@dataclass(frozen=True, slots=True)
class SeatControls:
    """Seat-control requests of one game service, through its command pipeline."""

    commands: CommandHandler

    @staticmethod
    def check_caller(identity: Identity) -> None:
        """Refuse a player's token before anything is looked up.

        :raises ServiceError: PERMISSION_DENIED unless the token is a service's or an admin's.
        """
        if not identity.is_privileged:
            raise ServiceError(
                grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                "only a service or admin token hands seats to bots and back",
            )

    async def control(self, identity: Identity, snapshot: GameSnapshot,
                      request: game_pb2.ControlSeatRequest) -> Outcome:
        """Apply a ``ControlSeat`` request (``snapshot``: the game as the caller found it).

        :raises ServiceError: PERMISSION_DENIED for a player's token; ABORTED for a stale
            ``expected_seq``.
        :raises RuleViolation: when the engine refuses the change (a bot's own seat, a match
            that is over, no such seat).
        """
        self.check_caller(identity)
        body = log_pb2.SeatControl(
            seat=request.seat, bot=request.bot, bot_level=request.bot_level if request.bot else "",
            reason=request.reason, requested_by=requester_of(identity),
        )
        return await self._submit(identity, snapshot, body, request.seat,
                                  request.expected_seq if request.HasField("expected_seq")
                                  else None)

    async def on_stream_opened(self, identity: Identity, snapshot: GameSnapshot,
                               seat: int | None) -> None:
        """Give ``seat`` back to its player, who just opened a stream, if a bot plays it.

        Never fails the stream: a refusal (the match just ended) or a lost race is logged.
        """
        if seat is None or snapshot.is_over:
            return
        holders = holders_of(snapshot.state)
        if seat >= len(holders) or not holders[seat].bot:
            return
        body = log_pb2.SeatControl(
            seat=seat, bot=False, reason=log_pb2.SEAT_CONTROL_REASON_RECONNECTED,
            requested_by=requester_of(identity),
        )
        try:
            outcome = await self._submit(identity, snapshot, body, seat, None)
        except (RuleViolation, ServiceError) as refused:
            _log.info("seat_return_refused", game_id=snapshot.game_id, seat=seat,
                      error=str(refused))
            return
        if outcome.entries and not outcome.duplicate:
            _log.info("seat_returned", game_id=snapshot.game_id, seat=seat,
                      player_id=identity.player_id, seq=outcome.snapshot.seq)

    async def _submit(self, identity: Identity, snapshot: GameSnapshot,
                      body: log_pb2.SeatControl, seat: int, expected_seq: int | None
                      ) -> Outcome:
        submission = Submission(
            game_id=snapshot.game_id, command_id=_command_id(seat, body.bot, snapshot.seq),
            expected_seq=expected_seq, body_name=BODY, body=body, seat=seat, automatic=False,
        )
        return await self.commands.submit(identity, submission)
