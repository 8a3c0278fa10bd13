"""Hand's deciders: ``start`` (a match's first events) and ``decide`` (a command's events).

``decide`` checks the command's shape (:class:`~engine.core.errors.InvalidCommand`), then
whose turn and which phase it is, then the move's own rule (:mod:`engine.hand.turn`); it
returns the events the command causes, rules-caused consequences included (a restock, the
round's scores, the next deal, the match's end). It never changes the state it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.core.fairness import SERVER_SEED_BYTES, commit
from engine.hand import turn
from engine.hand.batch import Batch, deal
from engine.hand.codec import hand_event
from engine.hand.errors import HandCode
from engine.hand.opening import opening_pending
from engine.hand.rules import resolve_rules
from engine.hand.state import HandState, Phase


def start(
    rules: hand_pb2.HandRules,
    seed: bytes,
    players: Sequence[common_pb2.Player],
    *,
    at_ms: int = 0,
    server_seed_chosen: bool = False,
) -> list[log_pb2.Event]:
    """The first events of a match: the start (rules resolved, fairness block) and the
    first deal, dealt by seat 0. ``server_seed_chosen`` records that the seed was chosen
    by an admin rather than drawn at random.

    :raises RuleViolation: ``invalid_players`` / ``invalid_rules`` (see
        :func:`~engine.hand.rules.resolve_rules`), or ``invalid_rules`` when the server seed
        is not 32 bytes.
    """
    if len(seed) != SERVER_SEED_BYTES:
        raise RuleViolation(
            Code.INVALID_RULES, f"the server seed must be {SERVER_SEED_BYTES} bytes"
        )
    resolved = resolve_rules(rules, len(players))
    batch = Batch(None, at_ms=at_ms, automatic=False)
    batch.emit(
        hand_event(
            match_started=hand_pb2.HandMatchStarted(
                rules=resolved,
                players=players,
                fairness=common_pb2.Fairness(
                    server_seed_commitment=commit(seed),
                    client_seeds=[player.client_seed for player in players],
                    server_seed=seed,
                    server_seed_chosen=server_seed_chosen,
                ),
            )
        )
    )
    deal(batch, round_number=1, dealer=0)
    return batch.finish()


def decide(state: HandState | None, command: log_pb2.Command) -> list[log_pb2.Event]:
    """The events ``command`` causes in ``state``.

    :raises InvalidCommand: a command that is not Hand's, names no move or no real card.
    :raises RuleViolation: a move the rules do not allow now (the code says which rule).
    """
    move = command.hand  # an empty message when the command is another game's
    kind = move.WhichOneof("kind")
    if kind is None:
        if command.WhichOneof("game") != "hand":
            raise InvalidCommand(Code.WRONG_GAME, "not a Hand command")
        raise InvalidCommand(Code.MALFORMED_COMMAND, "the Hand command names no move")
    if state is None:
        raise RuleViolation(Code.WRONG_PHASE, "the match has not started")
    where = f"at seq {state.seq}"
    phase = state.phase
    if phase is _MATCH_OVER:
        raise RuleViolation(Code.GAME_OVER, f"the match is over ({kind} {where})")
    seat = command.seat
    if seat >= state.seats:
        raise InvalidCommand(Code.INVALID_SEAT, f"no seat {seat} {where}")
    if seat != state.turn or phase is _BETWEEN_DEALS:
        raise RuleViolation(Code.NOT_YOUR_TURN, f"seat {seat} is not to act {where}")
    _check_phase(state, phase, kind, where)
    batch = Batch(state, at_ms=command.at_ms, automatic=command.automatic)
    turn.MOVES[kind](batch, seat, getattr(move, kind), where)
    return batch.finish()


def _check_phase(state: HandState, phase: Phase, kind: str, where: str) -> None:
    # docs/rules/hand.md "A turn": draw, meld (optional), discard; the first player only discards.
    if phase is _FIRST_DISCARD and kind != "discard":
        raise RuleViolation(
            HandCode.FIRST_TURN_DISCARD_ONLY,
            f"the player after the dealer starts by discarding only ({kind} {where})",
        )
    is_draw = kind in _DRAWS
    if phase is _DRAW and not is_draw:
        raise RuleViolation(HandCode.MUST_DRAW_FIRST, f"draw a card first ({kind} {where})")
    if phase is _PLAY and is_draw:
        raise RuleViolation(HandCode.ALREADY_DREW, f"one draw a turn ({kind} {where})")
    if kind != "discard" and _laying_hand(state):
        raise RuleViolation(
            HandCode.HAND_MUST_DISCARD,
            f"a hand lays the whole hand at once: discard the last card ({kind} {where})",
        )


_BETWEEN_DEALS, _FIRST_DISCARD, _DRAW, _PLAY, _MATCH_OVER = (
    Phase.BETWEEN_DEALS, Phase.FIRST_DISCARD, Phase.DRAW, Phase.PLAY, Phase.MATCH_OVER
)  # read once: an enum member lookup is not free, and decide runs for every command
_DRAWS = frozenset(("draw_from_stock", "take_discard"))


def _laying_hand(state: HandState) -> bool:
    """The seat laid all its cards but one without its opening reaching the threshold: a
    "hand" in the making, whose only move left is to discard the last card."""
    return state.hands[state.turn].bit_count() == 1 and opening_pending(state)
