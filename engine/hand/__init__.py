"""Hand (الهاند), the Levantine and Gulf rummy, as a game of the engine protocol.

The rules are ``docs/rules/hand.md``: 106 identified cards, 2, 3
or 4 players or two partnerships, melds with stated jokers, an opening threshold, joker
retrieval, going out and the "hand" finish, restocks and void rounds, penalty scoring over
5 rounds. This module is the :class:`engine.core.protocol.Game` surface; the rules live in

- :mod:`~engine.hand.rules` (options), :mod:`~engine.hand.state` (the state),
- :mod:`~engine.hand.decide` / :mod:`~engine.hand.turn` / :mod:`~engine.hand.batch`
  (commands and their consequences), :mod:`~engine.hand.opening` (threshold, taken discard),
- :mod:`~engine.hand.evolve` (folding events), :mod:`~engine.hand.scoring`,
- :mod:`~engine.hand.legal` (legal commands), :mod:`~engine.hand.views` (view, redact),
- :mod:`~engine.hand.melds` and :mod:`~engine.hand.solver` (meld shapes and the exact search),
  :mod:`~engine.hand.screens` (cheap bounds that spare the search).

>>> from dast.v1 import common_pb2, hand_pb2
>>> events = start(hand_pb2.HandRules(), bytes(32), [common_pb2.Player()] * 2)
>>> state = replay(events)
>>> to_act(state), state.hands[1].bit_count(), len(state.stock)
(1, 15, 77)
"""

from __future__ import annotations

from typing import Final

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine.core.errors import Code, InvalidCommand
from engine.core.protocol import MatchSetup
from engine.hand.cards import is_joker
from engine.hand.codec import hand_command, meld_spec_of, table_meld_of_proto
from engine.hand.decide import decide, start
from engine.hand.evolve import evolve, replay
from engine.hand.hosting import (
    PLAYER_COUNTS,
    SCHEMA,
    TURN_STEPS,
    bot_policies,
    rules_for_players,
    seat_count,
    summarize,
    table_rules,
)
from engine.hand.legal import legal
from engine.hand.state import HandState, Phase
from engine.hand.views import redact, view

__all__ = [
    "GAME_TYPE",
    "NAME",
    "PLAYER_COUNTS",
    "SCHEMA",
    "TURN_STEPS",
    "HandState",
    "bot_policies",
    "command_for",
    "decide",
    "evolve",
    "is_over",
    "legal",
    "redact",
    "replay",
    "revealed_seed",
    "rules_for_players",
    "seat_count",
    "setup_of",
    "start",
    "summarize",
    "table_rules",
    "to_act",
    "view",
]

GAME_TYPE: Final = common_pb2.GAME_TYPE_HAND
NAME: Final = "hand"


def to_act(state: HandState) -> int | None:
    """The seat that must act now (None between deals and once the match is over)."""
    if state.phase in _ACTING:
        return state.turn
    return None


_ACTING: Final = frozenset((Phase.FIRST_DISCARD, Phase.DRAW, Phase.PLAY))
"""The phases in which a seat acts (read once: an enum member lookup is not free, and
``to_act`` is asked before every command)."""


def is_over(state: HandState) -> bool:
    """Whether the match has ended."""
    return state.phase is Phase.MATCH_OVER


def setup_of(first_event: log_pb2.Event) -> MatchSetup:
    """The arguments of :func:`start` recorded in a log's first event.

    :raises InvalidCommand: if the event is not Hand's match start.
    """
    if first_event.WhichOneof("game") != "hand" or (
        first_event.hand.WhichOneof("kind") != "match_started"
    ):
        raise InvalidCommand(Code.WRONG_GAME, f"seq {first_event.seq} is not a Hand match start")
    started = first_event.hand.match_started
    return MatchSetup(
        rules=started.rules,
        players=tuple(started.players),
        server_seed_commitment=started.fairness.server_seed_commitment,
        server_seed=started.fairness.server_seed,
        server_seed_chosen=started.fairness.server_seed_chosen,
    )


def revealed_seed(event: log_pb2.Event) -> bytes | None:
    """The server seed a match's final event reveals (None for any other event)."""
    if event.WhichOneof("game") != "hand" or event.hand.WhichOneof("kind") != "match_ended":
        return None
    return event.hand.match_ended.server_seed


def command_for(event: log_pb2.Event) -> log_pb2.Command | None:
    """The command a player-caused event records (None for rules-caused events)."""
    if event.WhichOneof("game") != "hand":
        return None
    payload = event.hand
    kind = payload.WhichOneof("kind")
    command: log_pb2.Command | None = None
    if kind == "card_drawn":
        drawn = payload.card_drawn
        command = (
            hand_command(drawn.seat, take_discard=hand_pb2.TakeDiscard())
            if drawn.from_discard
            else hand_command(drawn.seat, draw_from_stock=hand_pb2.DrawFromStock())
        )
    elif kind == "melds_laid":
        laid = payload.melds_laid
        specs = [meld_spec_of(table_meld_of_proto(m).meld) for m in laid.melds]
        command = hand_command(laid.seat, lay_melds=hand_pb2.LayMelds(melds=specs))
    elif kind == "card_laid_off":
        off = payload.card_laid_off
        move = hand_pb2.LayOff(meld_id=off.meld.id, card=off.card)
        if is_joker(off.card):
            move.joker_face = off.meld.faces[list(off.meld.cards).index(off.card)]
        command = hand_command(off.seat, lay_off=move)
    elif kind == "joker_retrieved":
        got = payload.joker_retrieved
        command = hand_command(
            got.seat,
            retrieve_joker=hand_pb2.RetrieveJoker(meld_id=got.meld.id, cards=got.cards),
        )
    elif kind == "card_discarded":
        thrown = payload.card_discarded
        command = hand_command(thrown.seat, discard=hand_pb2.Discard(card=thrown.card))
    if command is not None:
        command.at_ms = event.at_ms
        command.automatic = event.automatic
    return command
