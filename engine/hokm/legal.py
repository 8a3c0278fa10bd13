"""``legal`` and the choice entry of the three-player set-aside.

The hakem of a three-player round lays 4 of its 20 cards aside (docs/rules/hokm.md "Three
players"): C(20, 4) = 4,845 commands. ``legal`` lists them as one *choice entry*, a
``SetAsideCards`` naming the whole hand ("any 4 of these"), the form the seat's view has
always shown; :func:`entry_size`, :func:`entry_command` and :func:`entry_covers` (the
:class:`~engine.core.protocol.ChoiceEntries` protocol) count, list, draw and look up the
commands behind it without building them all, in lexicographic order of the sorted
4-card combinations of the entry's cards.

>>> from engine.core.cards import parse_cards, cards_text
>>> entry = log_pb2.Command(seat=1)
>>> entry.hokm.set_aside_cards.cards.extend(sorted(parse_cards("A♠ K♠ Q♠ J♠ 10♠ 9♠")))
>>> entry_size(entry)
15
>>> cards_text(entry_command(entry, 0).hokm.set_aside_cards.cards)
'9♠ 10♠ J♠ Q♠'
>>> cards_text(entry_command(entry, 14).hokm.set_aside_cards.cards)
'J♠ Q♠ K♠ A♠'
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Final

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine.core.cards import PACK_SIZE, iter_cards
from engine.hokm import _core
from engine.hokm.rules import SET_ASIDE_COUNT, VARIANT_SEATS
from engine.hokm.state import ACTING_PHASES, HokmState, Phase

_PLAY_CARD_BYTES: Final = tuple(
    tuple(
        log_pb2.Command(
            seat=seat, hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))
        ).SerializeToString()
        for card in range(PACK_SIZE)
    )
    for seat in range(max(VARIANT_SEATS.values()))
)
"""``_PLAY_CARD_BYTES[seat][card]``: the encoded command playing ``card``. Parsing it is
about twice as fast as building the nested message field by field, and ``legal`` builds
one per playable card at every decision (bench/engines.py)."""
_parse_command = log_pb2.Command.FromString


def legal(state: HokmState, seat: int) -> list[log_pb2.Command]:
    """The seat's legal entries now, in a stable order: trump suits ♠ ♥ ♣ ♦; cards by id;
    the one set-aside choice entry (the whole hand, sorted); piles A then B. Empty when the
    seat is not to act. Every entry but the set-aside is a command as it stands.

    >>> from engine import hokm
    >>> from engine.core.testing import bot_players
    >>> state = hokm.replay(hokm.start(hokm_pb2.HokmRules(), bytes(32), bot_players(4)))
    >>> [c.hokm.declare_trump.suit for c in legal(state, state.hakem)]
    [1, 2, 3, 4]
    """
    if seat != state.turn:
        return []
    if state.phase == Phase.PLAY:
        encoded = _PLAY_CARD_BYTES[seat]
        mask = _core.legal_play_mask(state.hands[seat], state.trick)
        return [_parse_command(encoded[card]) for card in iter_cards(mask)]
    if state.phase not in ACTING_PHASES:
        return []
    return [
        log_pb2.Command(seat=seat, hokm=hokm) for hokm in legal_hokm_commands(state, seat)
    ]


def legal_hokm_commands(state: HokmState, seat: int) -> list[hokm_pb2.HokmCommand]:
    """:func:`legal` without the envelope (what the seat's view lists)."""
    phase = state.phase
    if seat != state.turn or phase not in ACTING_PHASES:
        return []
    if phase == Phase.PLAY:
        mask = _core.legal_play_mask(state.hands[seat], state.trick)
        return [hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=c)) for c in iter_cards(mask)]
    if phase == Phase.DECLARE_TRUMP:
        return [
            hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=suit))  # type: ignore[arg-type]
            for suit in range(common_pb2.SUIT_SPADES, common_pb2.SUIT_DIAMONDS + 1)
        ]
    if phase == Phase.TAKE_PILE:
        return [
            hokm_pb2.HokmCommand(take_pile_card=hokm_pb2.TakePileCard(pile=pile))
            for pile in (0, 1)
        ]
    choose = hokm_pb2.SetAsideCards(cards=iter_cards(state.hands[seat]))
    return [hokm_pb2.HokmCommand(set_aside_cards=choose)]


def _is_choice(entry: log_pb2.Command) -> bool:
    # Only ``legal`` lists a set-aside with more than 4 cards, so a set-aside entry of
    # exactly 4 (or a malformed one) stands for itself.
    return (
        entry.hokm.WhichOneof("kind") == "set_aside_cards"
        and len(entry.hokm.set_aside_cards.cards) > SET_ASIDE_COUNT
    )


def entry_size(entry: log_pb2.Command) -> int:
    """How many commands a legal entry stands for: C(cards, 4) for the set-aside entry, 1
    for any other."""
    hokm = entry.hokm
    if hokm.WhichOneof("kind") != "set_aside_cards":  # every decision but one a round
        return 1
    offered = len(hokm.set_aside_cards.cards)
    return comb(offered, SET_ASIDE_COUNT) if offered > SET_ASIDE_COUNT else 1


def _combination_at(items: Sequence[int], size: int, index: int) -> list[int]:
    """The ``index``-th ``size``-combination of ``items`` in lexicographic order (the
    order of :func:`itertools.combinations`), by the combinatorial number system."""
    chosen: list[int] = []
    start, count = 0, len(items)
    while size:
        for position in range(start, count):
            # Combinations whose next item is items[position]: choose the rest after it.
            starting_here = comb(count - position - 1, size - 1)
            if index < starting_here:
                chosen.append(items[position])
                start, size = position + 1, size - 1
                break
            index -= starting_here
    return chosen


def entry_command(entry: log_pb2.Command, index: int) -> log_pb2.Command:
    """The ``index``-th command of ``entry`` (the entry itself for a plain command).

    :raises IndexError: if ``index`` is not below :func:`entry_size`.
    """
    size = entry_size(entry)
    if not 0 <= index < size:
        raise IndexError(f"entry holds {size} commands, not index {index}")
    if size == 1:
        return entry
    command = log_pb2.Command(seat=entry.seat, at_ms=entry.at_ms, automatic=entry.automatic)
    cards = _combination_at(entry.hokm.set_aside_cards.cards, SET_ASIDE_COUNT, index)
    command.hokm.set_aside_cards.cards.extend(cards)
    return command


def entry_covers(entry: log_pb2.Command, command: log_pb2.Command) -> bool:
    """Whether ``command`` is one of ``entry``'s commands: the same seat and, for the
    set-aside entry, 4 distinct cards of it in any order (``decide`` reads them as a set);
    for any other entry the same payload."""
    if command.seat != entry.seat or command.WhichOneof("game") != "hokm":
        return False
    if not _is_choice(entry):
        return bool(command.hokm == entry.hokm)
    if command.hokm.WhichOneof("kind") != "set_aside_cards":
        return False
    cards = command.hokm.set_aside_cards.cards
    offered = set(entry.hokm.set_aside_cards.cards)
    return len(cards) == SET_ASIDE_COUNT == len(set(cards)) and offered.issuperset(cards)
