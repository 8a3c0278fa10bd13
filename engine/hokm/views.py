"""What each seat may see: ``view``, ``redact`` and the card-visibility hooks.

A seat sees its own hand, everything played in the round, the hakem, trump, tricks won,
scores, whose turn it is and the deadline; with two players the piles' face-up cards and
the cards taken from them; with three players the hakem sees the kitty and its own
set-aside cards (everyone sees those when the round ends). A spectator (seat None) sees
only what is public. The server seed stays hidden from everyone until the final event.
"""

from __future__ import annotations

from collections.abc import Iterable

from dast.v1 import hokm_pb2, log_pb2
from engine.core.cards import CardSet, iter_cards
from engine.hokm.legal import legal_hokm_commands
from engine.hokm.state import NO_SEAT, NO_SUIT, FinishedTrick, HokmState, Phase

_PHASES_SHOWN = {
    Phase.DECLARE_TRUMP, Phase.SET_ASIDE, Phase.PLAY, Phase.TAKE_PILE, Phase.MATCH_OVER
}


def _mask(cards: Iterable[int]) -> CardSet:
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


def _trick(leader: int, cards: tuple[int, ...], winner: int, seats: int) -> hokm_pb2.Trick:
    return hokm_pb2.Trick(
        leader=max(leader, 0),
        plays=[
            hokm_pb2.SeatCard(seat=(leader + i) % seats, card=card) for i, card in enumerate(cards)
        ],
        winner=None if winner == NO_SEAT else winner,
    )


def view(state: HokmState, seat: int | None) -> hokm_pb2.HokmView:
    """What ``seat`` may see now (``None``: a spectator), with its legal commands.

    :raises ValueError: if ``seat`` does not exist.
    """
    seats = state.seats
    if seat is not None and not 0 <= seat < seats:
        raise ValueError(f"seat {seat} does not exist")
    finished: tuple[FinishedTrick, ...] = state.tricks
    result = hokm_pb2.HokmView(
        is_spectator=seat is None,
        seat=seat or 0,
        players=state.players,
        rules=state.rules,
        phase=state.phase if state.phase in _PHASES_SHOWN else 0,  # type: ignore[arg-type]
        round=state.round,
        hakem=None if state.hakem == NO_SEAT else state.hakem,
        trump=state.trump + 1 if state.trump != NO_SUIT else 0,  # type: ignore[arg-type]
        turn=None if state.turn == NO_SEAT else state.turn,
        deadline_ms=state.deadline_ms,
        hand_counts=[hand.bit_count() for hand in state.hands],
        current_trick=_trick(state.leader, state.trick, NO_SEAT, seats),
        tricks=[_trick(t.leader, t.cards, t.winner, seats) for t in finished],
        tricks_won=state.tricks_won,
        scores=state.scores,
        top_a=state.pile_a[0] if state.pile_a else None,
        top_b=state.pile_b[0] if state.pile_b else None,
        pile_size=len(state.pile_a),
        winners=state.winners,
    )
    if seat is None:
        return result
    result.hand.extend(iter_cards(state.hands[seat]))
    if seat == state.hakem and state.set_aside:
        result.set_aside.extend(iter_cards(state.set_aside))
    result.legal.extend(legal_hokm_commands(state, seat))
    return result


def redact(event: log_pb2.Event, seat: int | None) -> log_pb2.Event:
    """A copy of ``event`` without the cards ``seat`` may not see (``None``: a spectator):
    the server seed of the start, other seats' dealt cards, the kitty and the set-aside
    cards of another seat, and the hidden part of the two piles. Counts and face-up tops
    stay."""
    copy = log_pb2.Event()
    copy.CopyFrom(event)
    hokm = copy.hokm
    kind = hokm.WhichOneof("kind")
    if kind == "match_started":
        hokm.match_started.fairness.ClearField("server_seed")
    elif kind == "cards_dealt":
        for share in hokm.cards_dealt.hands:
            if share.seat != seat:
                share.ClearField("cards")
    elif kind == "piles_laid":
        hokm.piles_laid.ClearField("pile_a")
        hokm.piles_laid.ClearField("pile_b")
    elif kind == "kitty_taken":
        if hokm.kitty_taken.seat != seat:
            hokm.kitty_taken.ClearField("cards")
    elif kind == "cards_set_aside" and hokm.cards_set_aside.seat != seat:
        hokm.cards_set_aside.ClearField("cards")
    return copy


def hidden_mask(state: HokmState, seat: int | None) -> CardSet:
    """The cards that exist in ``state`` and that ``seat`` may not see now: other seats'
    hands (but for cards everyone saw taken from a pile), the set-aside cards of a hakem
    that is not ``seat`` until the round ends, and the face-down part of the piles."""
    hidden = 0
    for other, hand in enumerate(state.hands):
        if other != seat:
            hidden |= hand
    hidden &= ~state.public
    round_over = state.phase in (Phase.ROUND_OVER, Phase.MATCH_OVER)
    if seat != state.hakem and not round_over:
        hidden |= state.set_aside
    return hidden | _mask(state.pile_a[1:]) | _mask(state.pile_b[1:])


def event_cards(event: log_pb2.Event) -> CardSet:
    """Every card an event names (for the visibility checks of the simulation harness)."""
    hokm = event.hokm
    kind = hokm.WhichOneof("kind")
    if kind == "hakem_cards_shown":
        return _mask(c.card for c in hokm.hakem_cards_shown.cards)
    if kind == "cards_dealt":
        return _mask(c for share in hokm.cards_dealt.hands for c in share.cards)
    if kind == "piles_laid":
        piles = hokm.piles_laid
        return _mask(piles.pile_a) | _mask(piles.pile_b) | _mask((piles.top_a, piles.top_b))
    if kind == "kitty_taken":
        return _mask(hokm.kitty_taken.cards)
    if kind == "cards_set_aside":
        return _mask(hokm.cards_set_aside.cards)
    if kind == "card_played":
        return 1 << hokm.card_played.card
    if kind == "pile_cards_taken":
        taken = hokm.pile_cards_taken
        mask = (1 << taken.winner_card) | (1 << taken.loser_card)
        if taken.has_top_a:
            mask |= 1 << taken.top_a
        if taken.has_top_b:
            mask |= 1 << taken.top_b
        return mask
    if kind == "round_ended":
        return _mask(hokm.round_ended.set_aside)
    return 0


def view_cards(seen: hokm_pb2.HokmView) -> CardSet:
    """Every card a view names (for the visibility checks of the simulation harness)."""
    mask = _mask(seen.hand) | _mask(seen.set_aside)
    for trick in (seen.current_trick, *seen.tricks):
        mask |= _mask(play.card for play in trick.plays)
    if seen.HasField("top_a"):
        mask |= 1 << seen.top_a
    if seen.HasField("top_b"):
        mask |= 1 << seen.top_b
    for command in seen.legal:
        kind = command.WhichOneof("kind")
        if kind == "play_card":
            mask |= 1 << command.play_card.card
        elif kind == "set_aside_cards":
            mask |= _mask(command.set_aside_cards.cards)
    return mask
