"""Conversions between Hand's engine values and its proto messages (one place for each).

Also the envelope helpers: a Hand command or event wrapped in the log's ``Command`` /
``Event`` (``log.proto``: ``hand = 17``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from google.protobuf.message import Message

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import CardSet
from engine.hand.cards import DECK_SIZE, is_joker
from engine.hand.melds import Meld, MeldKind
from engine.hand.rules import MAX_PLAYERS
from engine.hand.state import TableMeld


def kind_to_proto(kind: MeldKind) -> hand_pb2.HandMeldKind.ValueType:
    """The proto enum value of a meld kind."""
    return hand_pb2.HandMeldKind.Value("HAND_MELD_KIND_" + kind.name)


def kind_of_proto(kind: hand_pb2.HandMeldKind.ValueType) -> MeldKind:
    """The meld kind of a proto enum value."""
    return MeldKind[hand_pb2.HandMeldKind.Name(kind).removeprefix("HAND_MELD_KIND_")]


def table_meld_to_proto(table_meld: TableMeld) -> hand_pb2.TableMeld:
    """The proto of a table meld."""
    return hand_pb2.TableMeld(
        id=table_meld.id,
        owner=table_meld.owner,
        kind=kind_to_proto(table_meld.meld.kind),
        cards=table_meld.meld.cards,
        faces=table_meld.meld.faces,
    )


def table_meld_of_proto(message: hand_pb2.TableMeld) -> TableMeld:
    """The table meld a proto records (trusted: it comes from the log)."""
    meld = Meld(kind_of_proto(message.kind), tuple(message.cards), tuple(message.faces))
    return TableMeld(message.id, message.owner, meld)


def meld_spec_of(meld: Meld) -> hand_pb2.MeldSpec:
    """The command spelling of a meld: its cards and each joker's face."""
    return hand_pb2.MeldSpec(
        cards=meld.cards,
        jokers=[
            hand_pb2.JokerFace(joker=card, face=face)
            for card, face in zip(meld.cards, meld.faces, strict=True)
            if is_joker(card)
        ],
    )


def hand_event(**kind: Message) -> log_pb2.Event:
    """An envelope holding one Hand event, e.g. ``hand_event(card_discarded=...)``."""
    ((name, message),) = kind.items()
    event = log_pb2.Event()
    # One copy into place: nested constructors would copy the payload twice.
    getattr(event.hand, name).CopyFrom(message)
    return event


def card_drawn_event(seat: int, card: int, *, from_discard: bool = False) -> log_pb2.Event:
    """``hand_event(card_drawn=CardDrawn(seat=seat, card=card, from_discard=...))``, parsed
    from bytes encoded once: a draw is every other event of a match, and parsing a few bytes
    builds the message several times faster than the constructors."""
    return _parse_event(_DRAWN[from_discard][seat][card])


def card_discarded_event(seat: int, card: int) -> log_pb2.Event:
    """``hand_event(card_discarded=CardDiscarded(seat=seat, card=card))``, parsed like
    :func:`card_drawn_event`."""
    return _parse_event(_DISCARDED[seat][card])


_parse_event = log_pb2.Event.FromString
_SEATS = range(MAX_PLAYERS)
_CARDS = range(DECK_SIZE)
_DRAWN: Final = tuple(
    tuple(
        tuple(
            hand_event(
                card_drawn=hand_pb2.CardDrawn(seat=seat, card=card, from_discard=from_discard)
            ).SerializeToString(deterministic=True)
            for card in _CARDS
        )
        for seat in _SEATS
    )
    for from_discard in (False, True)
)
_DISCARDED: Final = tuple(
    tuple(
        hand_event(
            card_discarded=hand_pb2.CardDiscarded(seat=seat, card=card)
        ).SerializeToString(deterministic=True)
        for card in _CARDS
    )
    for seat in _SEATS
)


def hand_command(seat: int, **kind: Message) -> log_pb2.Command:
    """An envelope holding one Hand command, e.g. ``hand_command(1, discard=...)``."""
    ((name, message),) = kind.items()
    command = log_pb2.Command(seat=seat)
    getattr(command.hand, name).CopyFrom(message)
    return command


def without(mask: CardSet, cards: Iterable[int]) -> CardSet:
    """``mask`` with ``cards`` removed."""
    for card in cards:
        mask &= ~(1 << card)
    return mask
