"""The command pipeline: authorize the seat, decide, chain, append, notify.

Each step is the engine's or the store's; this module only orders them and turns their
failures into :class:`~services.platform.errors.ServiceError` statuses. A process
serializes the commands of one game behind a lock; races between replicas are settled
by the store's primary key (ConcurrencyConflict → reload and decide again, or ABORTED
when the client pinned ``expected_seq``).

A ``command_id`` belongs to whoever sent it (:func:`sender_of`): a retry by the same sender
is answered with the first result, while the same id from anyone else is a command of its
own, so nobody can pre-empt a bot's, a timer's or another player's next command.

With an in-process bus the handler publishes a command's events itself, right after the
commit and still under the game's lock (so in seq order), and the store records them as
relayed in the same transaction: the relay has nothing to re-read. Any other bus is fed by
the relay from the store's outbox (``notify`` wakes it), which survives a bus outage.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message

from dast.v1 import log_pb2
from engine.core.chain import chain_entries
from engine.core.errors import RuleViolation
from services.game.repository import GameRepository, GameSnapshot
from services.platform.auth import Identity
from services.platform.bus import Bus, game_type_name
from services.platform.errors import Reason, ServiceError
from services.platform.models import SENDER_LENGTH
from services.platform.store import ConcurrencyConflict
from services.platform.validation import quoted_input

_log = logging.getLogger(__name__)

_MAX_RACES = 3
"""Times a command without expected_seq is decided again after losing a race."""
MAX_COMMAND_ID = 128


@dataclass(frozen=True, slots=True)
class Submission:
    """A command as the service received it (the body is the game's command message)."""

    game_id: str
    command_id: str
    expected_seq: int | None
    body_name: str
    body: Message
    seat: int | None
    automatic: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command appended (or had appended, for a duplicate) and the log's head."""

    snapshot: GameSnapshot
    seat: int
    entries: list[log_pb2.LogEntry]
    duplicate: bool


def acting_seat(snapshot: GameSnapshot, identity: Identity, requested: int | None) -> int:
    """The seat ``identity`` acts for: its own seat, or any seat for services and admins.

    :raises ServiceError: PERMISSION_DENIED for a seat the caller does not hold.
    """
    if identity.is_privileged:
        if requested is None:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                "a service or admin token must name the seat it acts for",
            )
        if requested >= len(snapshot.players):
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                f"game {quoted_input(snapshot.game_id)} has no seat {requested}",
            )
        return requested
    own = snapshot.seat_of(identity.player_id)
    if own is None:
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.NOT_SEATED,
            f"player {quoted_input(identity.player_id)} holds no seat in game "
            f"{quoted_input(snapshot.game_id)}",
        )
    if requested is not None and requested != own:
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.NOT_YOUR_SEAT,
            f"player {quoted_input(identity.player_id)} holds seat {own}, not seat "
            f"{requested}",
        )
    return own


def sender_of(identity: Identity, seat: int) -> str:
    """Who sends a command, as the store keys its ``command_id`` (see the module docstring).

    A player is their player id; a service or admin token is its identity plus the seat it
    acts for, so two replicas of one service (the same token) still dedupe each other's
    commands for a seat. The role leads the name, so no player id can pass for a service.
    A name too long for the store, or with characters it need not hold, becomes a digest.

    >>> from services.platform.auth import Role
    >>> sender_of(Identity("p1", Role.PLAYER), 2)
    'player:p1'
    >>> sender_of(Identity("bots", Role.SERVICE), 2)
    'service:bots#2'
    """
    if identity.is_privileged:
        sender = f"{identity.role}:{identity.player_id}#{seat}"
    else:
        sender = f"{identity.role}:{identity.player_id}"
    if len(sender) <= SENDER_LENGTH and sender.isascii() and sender.isprintable():
        return sender
    digest = hashlib.sha256(sender.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest}"


def _check_expected(snapshot: GameSnapshot, expected_seq: int | None) -> None:
    if expected_seq is not None and expected_seq != snapshot.seq:
        raise ServiceError(
            grpc.StatusCode.ABORTED, Reason.STALE_EXPECTED_SEQ,
            f"game {quoted_input(snapshot.game_id)} is at seq {snapshot.seq}, not "
            f"{expected_seq}",
        )


class CommandHandler:
    """Runs submissions against a repository, stamping commands with ``clock()`` (ms)."""

    def __init__(
        self,
        repository: GameRepository,
        clock: Callable[[], int],
        notify: Callable[[], None],
        *,
        inline_bus: Bus | None = None,
        on_committed: Callable[[str, Sequence[log_pb2.LogEntry]], None] | None = None,
    ) -> None:
        self.repository = repository
        self._clock = clock
        self._notify = notify
        self.inline_bus = inline_bus
        """The in-process bus this handler publishes to itself (None: the relay does)."""
        self.on_committed = on_committed
        """Told of each batch this process committed, before it is published (this
        process's streams of the game take it at once: services.game.streams)."""

    async def published(self, snapshot: GameSnapshot, entries: Sequence[log_pb2.LogEntry]) -> None:
        """Hand freshly committed entries on: to this process's streams, then publish them
        inline, or wake the relay."""
        if self.on_committed is not None:
            self.on_committed(snapshot.game_id, entries)
        if self.inline_bus is None:
            self._notify()
            return
        try:
            name = game_type_name(snapshot.game.GAME_TYPE)
            await self.inline_bus.publish(name, snapshot.game_id, entries)
        except Exception:  # only a closed bus (shutdown) refuses; the command stands
            _log.warning("inline publish of game %s failed", snapshot.game_id, exc_info=True)

    async def submit(self, identity: Identity, submission: Submission) -> Outcome:
        """Apply one command for ``identity``.

        :raises ServiceError: for permission, staleness and lost races.
        :raises RuleViolation: when the engine refuses the command.
        :raises GameNotFound: for an unknown game.
        """
        if not submission.command_id or len(submission.command_id) > MAX_COMMAND_ID:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                f"command_id must have 1 to {MAX_COMMAND_ID} characters",
            )
        repo = self.repository
        async with repo.lock(submission.game_id):
            snapshot = await repo.get(submission.game_id)
            if submission.expected_seq is not None and submission.expected_seq > snapshot.seq:
                snapshot = await repo.refresh(submission.game_id)  # another replica moved on
            seat = acting_seat(snapshot, identity, submission.seat)
            sender = sender_of(identity, seat)
            for _ in range(_MAX_RACES):
                try:
                    _check_expected(snapshot, submission.expected_seq)
                    events = self._decide(snapshot, seat, submission)
                except (RuleViolation, ServiceError):
                    fresh = await repo.refresh(submission.game_id)
                    duplicate = await repo.find_duplicate(
                        submission.game_id, sender, submission.command_id
                    )
                    if duplicate is not None:
                        return Outcome(fresh, seat, duplicate.entries, True)
                    if fresh.seq == snapshot.seq:
                        raise  # the refusal stands on the latest state
                    snapshot = fresh
                    continue
                if not events:
                    # Only seat control decides nothing (the seat is already so controlled);
                    # a stale cache must not answer that, so it holds on the latest state.
                    fresh = await repo.refresh(submission.game_id)
                    if fresh.seq == snapshot.seq:
                        return Outcome(snapshot, seat, [], False)
                    snapshot = fresh
                    continue
                entries = chain_entries(events, snapshot.last_hash, key=snapshot.chain_key)
                try:
                    snapshot, result = await repo.append(
                        snapshot, entries, submission.command_id, sender=sender,
                        relayed=self.inline_bus is not None,
                    )
                except ConcurrencyConflict:
                    snapshot = await repo.refresh(submission.game_id)
                    if submission.expected_seq is not None:
                        break
                    continue
                if not result.duplicate:
                    await self.published(snapshot, result.entries)
                return Outcome(snapshot, seat, result.entries, result.duplicate)
        raise ServiceError(
            grpc.StatusCode.ABORTED, Reason.CONCURRENT_COMMAND,
            f"another command on game {quoted_input(submission.game_id)} won the race; "
            "reload and retry",
        )

    def _decide(
        self, snapshot: GameSnapshot, seat: int, submission: Submission
    ) -> list[log_pb2.Event]:
        command = log_pb2.Command(seat=seat, at_ms=self._clock(), automatic=submission.automatic)
        getattr(command, submission.body_name).CopyFrom(submission.body)
        return snapshot.game.decide(snapshot.state, command)
