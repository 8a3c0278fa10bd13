"""``start`` and ``decide``: the checked edge of the Hokm engine (``legal`` is in
:mod:`engine.hokm.legal`).

``decide`` validates a command completely, then builds the events it causes, applying each
to a working copy of the state (:func:`~engine.hokm.evolve.evolve`) so that the rules that
follow (trick end, round end, next round's deal) see the facts before them. A card that
completes a trick without ending the round is the exception, for speed: the trick's winner
and the tricks won are worked out directly, since nothing else follows. The rules
themselves are the kernels of :mod:`engine.hokm._core` and :mod:`engine.hokm.deal`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine.core.cards import PACK_SIZE, card_name, iter_cards
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.core.fairness import SERVER_SEED_BYTES, commit, deck_key
from engine.hokm import _core
from engine.hokm.deal import deal_round, draw_hakem, seating, split_piles
from engine.hokm.errors import HokmCode
from engine.hokm.evolve import evolve
from engine.hokm.rules import (
    SET_ASIDE_COUNT,
    TOTAL_TRICKS,
    VARIANT_SEATS,
    resolve_rules,
    rules_proto,
)
from engine.hokm.state import HokmState, Phase

ACTING = frozenset({Phase.DECLARE_TRUMP, Phase.SET_ASIDE, Phase.PLAY, Phase.TAKE_PILE})


class _Batch:
    """The events of one command, applied one by one to a working state."""

    __slots__ = ("at_ms", "automatic", "events", "state")

    def __init__(self, state: HokmState | None, at_ms: int, automatic: bool) -> None:
        self.state = state
        self.at_ms = at_ms
        self.automatic = automatic
        self.events: list[log_pb2.Event] = []

    def emit(self, hokm: hokm_pb2.HokmEvent) -> HokmState:
        seq = 1 if self.state is None else self.state.seq + 1
        return self.add(
            log_pb2.Event(seq=seq, at_ms=self.at_ms, automatic=self.automatic, hokm=hokm)
        )

    def add(self, event: log_pb2.Event) -> HokmState:
        """Append an event built for the next seq (and this command) and apply it."""
        self.events.append(event)
        self.state = evolve(self.state, event)
        return self.state

    def finish(self) -> list[log_pb2.Event]:
        """Stamp the deadline of the seat left to act on the last event (the brief's rule:
        ``at_ms + turn_seconds * 1000`` when ``turn_seconds`` > 0)."""
        state = self.state
        assert state is not None
        seconds = state.options.turn_seconds
        if seconds and state.phase in ACTING and self.events:
            self.events[-1].deadline_ms = self.at_ms + seconds * 1000
        return self.events


def start(
    rules: hokm_pb2.HokmRules,
    seed: bytes,
    players: Sequence[common_pb2.Player],
    *,
    at_ms: int = 0,
    server_seed_chosen: bool = False,
) -> list[log_pb2.Event]:
    """The first events of a match: the start (with the fairness record) and round 1's
    opening (hakem selection and the first cards). ``server_seed_chosen`` records that the
    seed was chosen by an admin rather than drawn at random.

    :raises InvalidCommand: (``invalid_rules``) for bad options or a seed that is not 32
        bytes, (``invalid_players``) when the number of players is not the variant's.

    >>> from dast.v1 import common_pb2
    >>> players = [common_pb2.Player(player_id=f"p{i}") for i in range(4)]
    >>> events = start(hokm_pb2.HokmRules(), bytes(32), players)
    >>> [e.hokm.WhichOneof("kind") for e in events]  # doctest: +NORMALIZE_WHITESPACE
    ['match_started', 'round_started', 'hakem_cards_shown', 'hakem_chosen', 'cards_dealt']
    """
    options = resolve_rules(rules)
    if not isinstance(seed, bytes) or len(seed) != SERVER_SEED_BYTES:
        raise InvalidCommand(
            Code.INVALID_RULES, f"the server seed must be {SERVER_SEED_BYTES} bytes"
        )
    if len(players) != options.seats:
        raise InvalidCommand(
            Code.INVALID_PLAYERS, f"this variant seats {options.seats} players, got {len(players)}"
        )
    client_seeds = [player.client_seed for player in players]
    key = deck_key(seed, client_seeds)
    started = hokm_pb2.HokmMatchStarted(
        rules=rules_proto(options),
        players=list(players),
        fairness=common_pb2.Fairness(
            server_seed_commitment=commit(seed), client_seeds=client_seeds, server_seed=seed,
            server_seed_chosen=server_seed_chosen,
        ),
        seating=seating(key, options.seats) if options.random_partners else range(options.seats),
    )
    batch = _Batch(None, at_ms, False)
    batch.emit(hokm_pb2.HokmEvent(match_started=started))
    _open_round(batch, 1, None)
    return batch.finish()


def _open_round(batch: _Batch, round_no: int, hakem: int | None) -> None:
    """Round ``round_no``'s opening: choose the hakem (``hakem`` None: by
    ``hakem_selection``), deal the hakem's first 5 cards, or with two players and
    ``trump_2p = pile_card`` the whole deal, the piles and the pile card's trump."""
    state = batch.state
    assert state is not None
    options, key = state.options, state.deck_key
    batch.emit(hokm_pb2.HokmEvent(round_started=hokm_pb2.RoundStarted(round=round_no)))
    if hakem is None:
        draw = draw_hakem(options, key, round_no)
        for attempt, shown in enumerate(draw.attempts, start=1):
            cards = [hokm_pb2.SeatCard(seat=seat, card=card) for seat, card in shown]
            batch.emit(hokm_pb2.HokmEvent(
                hakem_cards_shown=hokm_pb2.HakemCardsShown(attempt=attempt, cards=cards)
            ))
        hakem = draw.hakem
    batch.emit(hokm_pb2.HokmEvent(hakem_chosen=hokm_pb2.HakemChosen(seat=hakem)))
    deal = deal_round(options, key, round_no, hakem)
    if options.hakem_declares:
        share = hokm_pb2.DealtCards(seat=hakem, cards=deal.first, count=len(deal.first))
        batch.emit(hokm_pb2.HokmEvent(cards_dealt=hokm_pb2.CardsDealt(hands=[share])))
        return
    # Two players, trump_2p = pile_card: everything is dealt now; trump is pile A's top.
    hands = [deal.full_hand(seat, hakem) for seat in range(options.seats)]
    batch.emit(hokm_pb2.HokmEvent(cards_dealt=_cards_dealt(hands)))
    pile_a, pile_b = split_piles(deal.leftover)
    batch.emit(hokm_pb2.HokmEvent(piles_laid=_piles_laid(pile_a, pile_b)))
    declared = hokm_pb2.TrumpDeclared(seat=hakem, suit=pile_a[0] // 13 + 1, from_pile=True)  # type: ignore[arg-type]
    batch.emit(hokm_pb2.HokmEvent(trump_declared=declared))


def _cards_dealt(hands: Sequence[Sequence[int]]) -> hokm_pb2.CardsDealt:
    return hokm_pb2.CardsDealt(
        hands=[
            hokm_pb2.DealtCards(seat=seat, cards=cards, count=len(cards))
            for seat, cards in enumerate(hands)
        ]
    )


def _piles_laid(pile_a: Sequence[int], pile_b: Sequence[int]) -> hokm_pb2.PilesLaid:
    return hokm_pb2.PilesLaid(pile_a=pile_a, pile_b=pile_b, top_a=pile_a[0], top_b=pile_b[0])


# ---- decide ----


def _fail(code: str, message: str, state: HokmState) -> RuleViolation:
    return RuleViolation(code, f"{message} (at seq {state.seq})")


def _check_card(card: int) -> None:
    if card >= PACK_SIZE:
        raise InvalidCommand(Code.INVALID_CARD, f"no card has id {card} (cards are 0..51)")


def decide(state: HokmState, command: log_pb2.Command) -> list[log_pb2.Event]:
    """The events ``command`` causes in ``state``.

    Malformed commands are refused whatever the state; then the match must go on, the
    command must suit the phase and come from the seat to act, and the cards must be held
    and allowed. ``state`` must be replayed from the full log: the next deal is drawn from
    the server seed, which a redacted log does not hold.

    :raises InvalidCommand: ``wrong_game``, ``malformed_command``, ``invalid_seat``,
        ``invalid_card``, ``invalid_suit``, ``duplicate_card``, ``no_such_pile``.
    :raises RuleViolation: ``game_over``, ``wrong_phase``, ``not_your_turn``, ``not_hakem``,
        ``trump_not_declared``, ``card_not_in_hand``, ``must_follow_suit``,
        ``wrong_set_aside_count``.
    """
    if command.WhichOneof("game") != "hokm":
        raise InvalidCommand(Code.WRONG_GAME, "the command is not a Hokm command")
    hokm = command.hokm
    kind = hokm.WhichOneof("kind")
    seat = command.seat
    if kind is None:
        raise InvalidCommand(Code.MALFORMED_COMMAND, "the Hokm command names no action")
    if seat >= len(state.hands):
        raise InvalidCommand(Code.INVALID_SEAT, f"seat {seat} does not exist")
    if kind == "play_card":
        card = hokm.play_card.card
        if card >= PACK_SIZE:  # _check_card, inlined on the path of most decisions
            _check_card(card)
        return _play_card(state, seat, card, command)  # checks that the match goes on
    if kind == "declare_trump":
        suit = hokm.declare_trump.suit
        if not common_pb2.SUIT_SPADES <= suit <= common_pb2.SUIT_DIAMONDS:
            raise InvalidCommand(HokmCode.INVALID_SUIT, f"suit {suit} is not ♠ ♥ ♣ ♦")
        _check_match_on(state)
        return _declare_trump(state, seat, suit, command)
    if kind == "set_aside_cards":
        cards = list(hokm.set_aside_cards.cards)
        for card in cards:
            _check_card(card)
        if len(set(cards)) != len(cards):
            raise InvalidCommand(HokmCode.DUPLICATE_CARD, "a card is laid aside twice")
        _check_match_on(state)
        return _set_aside(state, seat, cards, command)
    pile = hokm.take_pile_card.pile
    if pile > 1:
        raise InvalidCommand(HokmCode.NO_SUCH_PILE, f"pile {pile} does not exist (0 = A, 1 = B)")
    _check_match_on(state)
    return _take_pile(state, seat, pile, command)


def _check_match_on(state: HokmState) -> None:
    if state.phase == Phase.MATCH_OVER:
        raise _fail(Code.GAME_OVER, "the match is over", state)


def _check_turn(state: HokmState, seat: int, phase: Phase, what: str) -> None:
    if state.phase != phase:
        raise _fail(Code.WRONG_PHASE, f"cannot {what} now", state)
    if seat != state.turn:
        raise _fail(Code.NOT_YOUR_TURN, f"seat {seat} cannot {what}: seat {state.turn} acts", state)


def _declare_trump(
    state: HokmState, seat: int, suit: int, command: log_pb2.Command
) -> list[log_pb2.Event]:
    # docs/rules/hokm.md "Dealing and trump": the hakem declares from its first 5 cards.
    if state.phase != Phase.DECLARE_TRUMP:
        raise _fail(Code.WRONG_PHASE, "trump can only be declared before play", state)
    if seat != state.hakem:
        raise _fail(HokmCode.NOT_HAKEM, f"only the hakem (seat {state.hakem}) declares trump",
                    state)
    batch = _Batch(state, command.at_ms, command.automatic)
    declared = hokm_pb2.TrumpDeclared(seat=seat, suit=suit)  # type: ignore[arg-type]
    batch.emit(hokm_pb2.HokmEvent(trump_declared=declared))
    options, hakem = state.options, state.hakem
    deal = deal_round(options, state.deck_key, state.round, hakem)
    batch.emit(hokm_pb2.HokmEvent(cards_dealt=_cards_dealt(deal.rest)))
    if options.seats == 3:
        kitty = hokm_pb2.KittyTaken(seat=hakem, cards=deal.leftover, count=len(deal.leftover))
        batch.emit(hokm_pb2.HokmEvent(kitty_taken=kitty))
    elif options.seats == 2:
        batch.emit(hokm_pb2.HokmEvent(piles_laid=_piles_laid(*split_piles(deal.leftover))))
    return batch.finish()


def _set_aside(
    state: HokmState, seat: int, cards: list[int], command: log_pb2.Command
) -> list[log_pb2.Event]:
    # docs/rules/hokm.md "Three players": the hakem lays 4 of its 20 cards aside.
    if state.phase != Phase.SET_ASIDE:
        raise _fail(Code.WRONG_PHASE, "cards are laid aside only after the kitty is taken",
                    state)
    if seat != state.hakem:
        raise _fail(HokmCode.NOT_HAKEM, f"only the hakem (seat {state.hakem}) lays cards aside",
                    state)
    if len(cards) != SET_ASIDE_COUNT:
        raise _fail(HokmCode.WRONG_SET_ASIDE_COUNT,
                    f"lay exactly {SET_ASIDE_COUNT} cards aside, not {len(cards)}", state)
    hand = state.hands[seat]
    for card in cards:
        if not hand >> card & 1:
            raise _fail(HokmCode.CARD_NOT_IN_HAND, f"seat {seat} does not hold {card_name(card)}",
                        state)
    batch = _Batch(state, command.at_ms, command.automatic)
    aside = hokm_pb2.CardsSetAside(seat=seat, cards=sorted(cards), count=len(cards))
    batch.emit(hokm_pb2.HokmEvent(cards_set_aside=aside))
    return batch.finish()


def _take_pile(
    state: HokmState, seat: int, pile: int, command: log_pb2.Command
) -> list[log_pb2.Event]:
    # docs/rules/hokm.md "Two players": the trick's winner takes a top; the loser the other.
    _check_turn(state, seat, Phase.TAKE_PILE, "take a pile card")
    tops = (state.pile_a, state.pile_b)
    mine, other = tops[pile], tops[1 - pile]
    taken = hokm_pb2.PileCardsTaken(
        winner=seat, winner_pile=pile, winner_card=mine[0], loser_card=other[0],
        has_top_a=len(state.pile_a) > 1, top_a=state.pile_a[1] if len(state.pile_a) > 1 else 0,
        has_top_b=len(state.pile_b) > 1, top_b=state.pile_b[1] if len(state.pile_b) > 1 else 0,
    )
    batch = _Batch(state, command.at_ms, command.automatic)
    batch.emit(hokm_pb2.HokmEvent(pile_cards_taken=taken))
    return batch.finish()


_CARD_PLAYED_BYTES: Final = tuple(
    tuple(
        log_pb2.Event(
            hokm=hokm_pb2.HokmEvent(card_played=hokm_pb2.CardPlayed(seat=seat, card=card))
        ).SerializeToString()
        for card in range(PACK_SIZE)
    )
    for seat in range(max(VARIANT_SEATS.values()))
)
"""``_CARD_PLAYED_BYTES[seat][card]``: the encoded event of ``seat`` playing ``card``, before
its seq and times are set. Parsing it and setting those is about three times faster than
building the nested event field by field, on the path of most decisions."""
_TRICK_TAKEN_BYTES: Final = tuple(
    tuple(
        log_pb2.Event(
            hokm=hokm_pb2.HokmEvent(trick_taken=hokm_pb2.TrickTaken(seat=seat, trick=number))
        ).SerializeToString()
        for number in range(max(TOTAL_TRICKS.values()) + 1)
    )
    for seat in range(max(VARIANT_SEATS.values()))
)
"""``_TRICK_TAKEN_BYTES[seat][trick]``: the encoded event of ``seat`` taking trick number
``trick``, likewise (one in every trick)."""
_parse_event = log_pb2.Event.FromString


def _play_card(
    state: HokmState, seat: int, card: int, command: log_pb2.Command
) -> list[log_pb2.Event]:
    # docs/rules/hokm.md "Playing tricks".
    if state.phase != Phase.PLAY or seat != state.turn:
        _check_match_on(state)
        if state.phase == Phase.DECLARE_TRUMP:
            raise _fail(HokmCode.TRUMP_NOT_DECLARED,
                        "no card is played before trump is declared", state)
        _check_turn(state, seat, Phase.PLAY, "play a card")
    hand, trick = state.hands[seat], state.trick
    if not hand >> card & 1:
        raise _fail(HokmCode.CARD_NOT_IN_HAND, f"seat {seat} does not hold {card_name(card)}",
                    state)
    if not _core.legal_play_mask(hand, trick) >> card & 1:
        led = card_name(trick[0])
        raise _fail(HokmCode.MUST_FOLLOW_SUIT,
                    f"seat {seat} must follow {led}'s suit, not play {card_name(card)}", state)
    event = _parse_event(_CARD_PLAYED_BYTES[seat][card])
    event.seq = state.seq + 1
    event.at_ms = command.at_ms
    event.automatic = command.automatic
    seats, seconds = len(state.hands), state.options.turn_seconds
    if len(trick) + 1 < seats:
        # The hot path: the trick goes on and the next seat plays; no state to work out.
        if seconds:
            event.deadline_ms = command.at_ms + seconds * 1000
        return [event]
    # The trick is complete: its winner takes it (and leads the next, or with two players
    # first takes a pile card). The facts the rules need next are worked out here rather
    # than by applying both events, which only the end of a round needs.
    winner = (state.leader + _core.winning_index((*trick, card), state.trump)) % seats
    taken = _parse_event(_TRICK_TAKEN_BYTES[winner][len(state.tricks) + 1])
    taken.seq = state.seq + 2
    taken.at_ms = command.at_ms
    taken.automatic = command.automatic
    tricks_won = list(state.tricks_won)
    tricks_won[winner] += 1
    hakem_won = _core.round_winner(state.options, state.hakem, tricks_won)
    if hakem_won is None:
        if seconds:
            taken.deadline_ms = command.at_ms + seconds * 1000
        return [event, taken]
    batch = _Batch(state, command.at_ms, command.automatic)
    batch.add(event)
    _end_round(batch, batch.add(taken), hakem_won)
    return batch.finish()


def _end_round(batch: _Batch, state: HokmState, hakem_won: bool) -> None:
    options, hakem = state.options, state.hakem
    # docs/rules/hokm.md "Scoring a round" (three players: "Three players").
    score = _core.score_round(options, hakem, state.tricks_won, hakem_won)
    scores = [total + add for total, add in zip(state.scores, score.points, strict=True)]
    ended = hokm_pb2.RoundEnded(
        round=state.round, hakem=hakem, tricks=state.tricks_won, winners=score.winners,
        result=score.result,  # type: ignore[arg-type]
        points=score.points, scores=scores, set_aside=iter_cards(state.set_aside),
    )
    batch.emit(hokm_pb2.HokmEvent(round_ended=ended))
    # docs/rules/hokm.md "Next round and end of game".
    winners = _core.match_winners(options, scores)
    if winners:
        ended_match = hokm_pb2.HokmMatchEnded(
            winners=winners, scores=scores, server_seed=state.server_seed
        )
        batch.emit(hokm_pb2.HokmEvent(match_ended=ended_match))
        return
    next_hakem: int | None = None
    if options.hakem_rotation == hokm_pb2.HAKEM_ROTATION_KEEP_IF_WON:
        next_hakem = _core.next_hakem_kept(options, hakem, hakem_won)
    _open_round(batch, state.round + 1, next_hakem)


# ---- who acts ----


def to_act(state: HokmState) -> int | None:
    """The seat that must act now, or None (match over)."""
    return state.turn if state.phase in ACTING and state.turn >= 0 else None


def is_over(state: HokmState) -> bool:
    """Whether the match has ended."""
    return state.phase == Phase.MATCH_OVER
