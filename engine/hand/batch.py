"""A command's batch of events, built one event at a time over an evolving state.

``decide`` emits an event and decides what follows from the state after it (a round's
end, the next deal, a restock): each consequence is computed from exactly the state a
replay will see. The batch folds its events into that scratch state with :func:`evolve`
only when a move asks for it (:attr:`Batch.current`): the caller folds every event
anyway, and most commands (a draw, a discard that passes the turn) need nothing from the
state after them, so their events are folded once, by the caller.

The rules-caused events that follow a turn (restocks, void rounds, scores, deals, the
match's end) live here too, because ``start`` and ``decide`` both end with them.
"""

from __future__ import annotations

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import iter_cards
from engine.core.fairness import deck_key
from engine.core.rng import DeterministicRandom
from engine.hand.cards import DECK_SIZE
from engine.hand.codec import hand_event
from engine.hand.evolve import evolve
from engine.hand.scoring import (
    match_winners,
    new_totals,
    next_dealer,
    round_points,
    team_points,
)
from engine.hand.state import HandState, Phase

HAND_SIZE = 14
"""Cards dealt to each seat; the seat after the dealer gets one more (rules "the deal")."""


class Batch:
    """The events of one command, numbered after ``state`` and stamped like the command."""

    __slots__ = ("_folded", "_seq", "at_ms", "automatic", "events", "state")

    def __init__(self, state: HandState | None, *, at_ms: int, automatic: bool) -> None:
        self.events: list[log_pb2.Event] = []
        self.at_ms = at_ms
        self.automatic = automatic
        self.state: HandState | None = state
        """The state after the first ``_folded`` events (folded on demand)."""
        self._folded = 0
        self._seq = 0 if state is None else state.seq

    @property
    def current(self) -> HandState:
        """The state after the events emitted so far (those not folded yet, folded now)."""
        state, events = self.state, self.events
        folded = self._folded
        if folded < len(events):
            for event in events[folded:]:
                state = evolve(state, event)
            self.state, self._folded = state, len(events)
        assert state is not None, "the batch has no state before match_started"
        return state

    def emit(self, event: log_pb2.Event) -> None:
        """Number, stamp and add one event, freshly built for this batch (its stamps still
        at their defaults); :attr:`current` folds it when a move needs the state after it."""
        self._seq += 1
        event.seq = self._seq
        if self.at_ms:  # a fresh event holds the defaults: set only what differs
            event.at_ms = self.at_ms
        if self.automatic:
            event.automatic = True
        self.events.append(event)

    def finish(self) -> list[log_pb2.Event]:
        """The events, the last one carrying the deadline of the seat left to act."""
        # The options never change after the match start: the state before the batch
        # tells the turn's length without folding the batch's events.
        seconds = (self.state or self.current).options.turn_seconds
        if self.events and seconds > 0 and self.current.phase in _ACTING_PHASES:
            self.events[-1].deadline_ms = self.at_ms + seconds * 1000
        return self.events


_ACTING_PHASES = (Phase.FIRST_DISCARD, Phase.DRAW, Phase.PLAY)


def stream(state: HandState, label: str) -> DeterministicRandom:
    """The match's random stream named ``label`` (docs/architecture.md "Provably fair deals")."""
    return DeterministicRandom(deck_key(state.server_seed, state.client_seeds), label)


def deal(batch: Batch, *, round_number: int, dealer: int) -> None:
    """Start a round: shuffle the 106 cards (stream ``deal/<n>``) and deal them.

    The seat after the dealer gets 15 cards, every other seat 14 (docs/rules/hand.md "the
    deal"); the rest is the stock, top first.
    """
    deal_number = batch.current.deal + 1
    batch.emit(
        hand_event(
            round_started=hand_pb2.HandRoundStarted(
                round=round_number, dealer=dealer, deal=deal_number
            )
        )
    )
    state = batch.current
    deck = stream(state, f"deal/{deal_number}").shuffle(list(range(DECK_SIZE)))
    hands = []
    position = 0
    for step in range(1, state.seats + 1):
        seat = (dealer + step) % state.seats
        size = HAND_SIZE + 1 if step == 1 else HAND_SIZE
        cards = sorted(deck[position : position + size])
        position += size
        hands.append(hand_pb2.HandDealtCards(seat=seat, cards=cards, count=len(cards)))
    hands.sort(key=lambda dealt: dealt.seat)
    stock = deck[position:]
    batch.emit(
        hand_event(
            cards_dealt=hand_pb2.HandCardsDealt(hands=hands, stock=stock, stock_count=len(stock))
        )
    )


def after_discard(batch: Batch, seat: int, before: HandState, card: int) -> None:
    """What follows ``seat``'s discard of ``card`` from the state ``before`` it: the round's
    end when ``seat`` went out, else a restock or a void round when the stock is empty
    (docs/rules/hand.md "End of a round")."""
    if before.stock and before.hands[seat] != 1 << card:
        # Neither can change with the discard (it leaves the stock alone): the turn
        # passes, and the batch need not fold its events to tell.
        return
    state = batch.current
    if state.hands[seat] == 0:
        _end_round(batch, seat)
        return
    if state.stock:
        return
    if state.restocks >= state.options.max_restocks or len(state.discard) < 2:
        # Void: nobody scores and the same dealer deals again under the same round number.
        batch.emit(
            hand_event(
                round_voided=hand_pb2.RoundVoided(round=state.round, restocks=state.restocks)
            )
        )
        deal(batch, round_number=state.round, dealer=state.dealer)
        return
    restocks = state.restocks + 1
    pile = list(state.discard[:-1])
    stock = stream(state, f"deal/{state.deal}/restock/{restocks}").shuffle(pile)
    batch.emit(
        hand_event(
            stock_restocked=hand_pb2.StockRestocked(
                stock=stock, stock_count=len(stock), restocks=restocks
            )
        )
    )


def _end_round(batch: Batch, went_out: int) -> None:
    state = batch.current
    options = state.options
    # A hand: the seat opened this very turn and touched no meld that was on the table
    # before it (rules "Hand": lay-offs onto its own new melds keep it a hand).
    is_hand = state.opened_this_turn and not state.used_older_melds
    points = round_points(options, state.hands, state.opened, went_out=went_out, is_hand=is_hand)
    totals = new_totals(options, state.totals, points)
    batch.emit(
        hand_event(
            round_ended=hand_pb2.HandRoundEnded(
                round=state.round,
                dealer=state.dealer,
                went_out=went_out,
                finish=hand_pb2.HAND_FINISH_HAND if is_hand else hand_pb2.HAND_FINISH_OUT,
                doubled=is_hand,
                points=points,
                totals=totals,
                opened=state.opened,
                remaining=[
                    hand_pb2.HandDealtCards(
                        seat=seat, cards=list(iter_cards(hand)), count=hand.bit_count()
                    )
                    for seat, hand in enumerate(state.hands)
                ],
                team_points=team_points(options, points),
            )
        )
    )
    state = batch.current
    if state.rounds_played >= options.rounds:
        batch.emit(
            hand_event(
                match_ended=hand_pb2.HandMatchEnded(
                    winners=match_winners(totals),
                    totals=totals,
                    server_seed=state.server_seed,
                )
            )
        )
        return
    deal(batch, round_number=state.round + 1, dealer=next_dealer(options, state.dealer, points))
