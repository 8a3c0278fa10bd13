"""Conversions between Hand's engine values and its proto messages (one place for each).

Also the envelope helpers: a Hand command or event wrapped in the log's ``Command`` /
``Event`` (``log.proto``: ``hand = 17``).
"""

from __future__ import annotations

from collections.abc import Iterable

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import CardSet
from engine.hand.cards import is_joker
from engine.hand.melds import Meld, MeldKind
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


def hand_event(**kind: object) -> log_pb2.Event:
    """An envelope holding one Hand event, e.g. ``hand_event(card_discarded=...)``."""
    return log_pb2.Event(hand=hand_pb2.HandEvent(**kind))  # type: ignore[arg-type]


def hand_command(seat: int, **kind: object) -> log_pb2.Command:
    """An envelope holding one Hand command, e.g. ``hand_command(1, discard=...)``."""
    return log_pb2.Command(seat=seat, hand=hand_pb2.HandCommand(**kind))  # type: ignore[arg-type]


def without(mask: CardSet, cards: Iterable[int]) -> CardSet:
    """``mask`` with ``cards`` removed."""
    for card in cards:
        mask &= ~(1 << card)
    return mask
