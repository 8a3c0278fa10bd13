"""Text of the terminal client: a seat's view, its legal commands, and events as lines.

Pure functions of the protos (no I/O), so the client's screen is testable line by line.
Cards use the engine's notation (``A♠``, ``10♥``, Hand jokers ``JK1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, lobby_pb2, log_pb2
from engine.core.cards import RANKS_PER_SUIT, SUIT_SYMBOLS, card_name
from engine.hand import stats as hand_stats
from engine.hand.cards import hand_card_name, is_joker, natural_of
from engine.hokm import stats as hokm_stats

SetAside = hokm_pb2.SetAsideCards
Teams = tuple[tuple[int, ...], ...]
"""The seats of every side of a match (partners together)."""


def suit_name(suit: int) -> str:
    """The symbol of a proto ``Suit`` (engine suit + 1); ``-`` when unset."""
    return SUIT_SYMBOLS[suit - 1] if 1 <= suit <= 4 else "-"


def sorted_hokm_hand(cards: Sequence[int], trump_suit: int) -> list[int]:
    """The hand grouped by suit, trump suit first, high cards first within a suit.

    >>> [card_name(c) for c in sorted_hokm_hand([0, 12, 25, 13], 2)]  # trump ♥
    ['A♥', '2♥', 'A♠', '2♠']
    """
    trump = trump_suit - 1

    def key(card: int) -> tuple[bool, int, int]:
        suit, rank = divmod(card, RANKS_PER_SUIT)
        return (suit != trump, suit, -rank)

    return sorted(cards, key=key)


def sorted_hand_cards(cards: Sequence[int]) -> list[int]:
    """Hand cards by suit then rank, jokers last."""
    def key(card: int) -> tuple[int, int]:
        if is_joker(card):
            return (9, card)
        return divmod(natural_of(card), RANKS_PER_SUIT)

    return sorted(cards, key=key)


def _name(player: common_pb2.Player, seat: int, me: int, table: lobby_pb2.Table | None) -> str:
    shown = "deleted player" if player.deleted else player.display_name or player.player_id
    text = f"{seat} {shown}"
    if seat == me:
        text += " (you)"
    if player.is_bot:
        text += " [bot]"
    elif table is not None and seat < len(table.seats) and table.seats[seat].taken_over_by_bot:
        text += " [bot playing]"
    return text


def seats_line(players: Sequence[common_pb2.Player], me: int,
               table: lobby_pb2.Table | None) -> str:
    """Who sits where, marking you and the bots."""
    return "Seats: " + " · ".join(_name(p, s, me, table) for s, p in enumerate(players))


def partnerships(view: hokm_pb2.HokmView | hand_pb2.HandView) -> Teams | None:
    """The partnerships of the match of ``view`` when its players count by team (Hokm with
    four players, Hand with partnerships), as the game's statistics rate it; None when
    every seat plays alone."""
    if isinstance(view, hokm_pb2.HokmView):
        teams = hokm_stats.teams(len(view.players))
    else:
        teams = hand_stats.teams(view.rules, len(view.players))
    return teams if any(len(team) > 1 for team in teams) else None


def side_figures(per_seat: Sequence[int], teams: Teams | None, me: int | None = None, *,
                 shared: bool) -> str:
    """Figures listed per seat (``seat:value``), or per team in a partnership game: a total
    the partners share (``shared``: the match score) once, else (tricks) their sum; ``me``
    marks your seat or team.

    >>> side_figures([3, 1, 0], None, 0, shared=True)
    '0 (you):3 1:1 2:0'
    >>> side_figures([2, 5, 2, 5], ((0, 2), (1, 3)), 3, shared=True)
    'team 0+2:2 · team 1+3 (you):5'
    >>> side_figures([4, 1, 3, 0], ((0, 2), (1, 3)), None, shared=False)
    'team 0+2:7 · team 1+3:1'
    """
    def value(seat: int) -> int:
        return per_seat[seat] if 0 <= seat < len(per_seat) else 0

    def you(seats: Sequence[int]) -> str:
        return " (you)" if me is not None and me in seats else ""

    if teams is None:
        return " ".join(f"{seat}{you((seat,))}:{figure}" for seat, figure in enumerate(per_seat))
    return " · ".join(
        "team " + "+".join(str(seat) for seat in team) + you(team) + ":"
        + str(value(team[0]) if shared else sum(value(seat) for seat in team))
        for team in teams)


def winners_text(winners: Sequence[int], teams: Teams | None) -> str:
    """The winning seats, or the winning teams in a partnership game.

    >>> winners_text([1, 3], ((0, 2), (1, 3))), winners_text([2], None)
    ('team 1+3', 'seat 2')
    """
    if teams is not None:
        won = [team for team in teams if set(team) & set(winners)]
        if won:
            return ", ".join("team " + "+".join(str(seat) for seat in team) for team in won)
    return ", ".join(f"seat {seat}" for seat in winners) or "nobody"


def timer_text(deadline_ms: int, now_ms: int) -> str:
    """Seconds left of the turn, or an empty string when untimed."""
    if deadline_ms <= 0:
        return ""
    return f" · {max(0, (deadline_ms - now_ms + 999) // 1000)}s left"


def hokm_label(command: hokm_pb2.HokmCommand) -> str:
    """One legal Hokm command as a menu entry."""
    kind = command.WhichOneof("kind")
    if kind == "play_card":
        return card_name(command.play_card.card)
    if kind == "declare_trump":
        return f"trump {suit_name(command.declare_trump.suit)}"
    if kind == "take_pile_card":
        return f"take pile {'AB'[command.take_pile_card.pile]}"
    if kind == "set_aside_cards":
        return "set aside 4 cards"
    return str(kind)


def ordered_legal(view: hokm_pb2.HokmView | hand_pb2.HandView) -> list[Any]:
    """The legal commands in menu order: Hokm cards as the hand shows them (trump first)."""
    if not isinstance(view, hokm_pb2.HokmView):
        return list(view.legal)
    order = {card: i for i, card in enumerate(sorted_hokm_hand(view.hand, view.trump))}

    def key(command: hokm_pb2.HokmCommand) -> int:
        if command.WhichOneof("kind") == "play_card":
            return order.get(command.play_card.card, len(order))
        return -1

    return sorted(view.legal, key=key)


def hokm_screen(view: hokm_pb2.HokmView, table: lobby_pb2.Table | None, now_ms: int
                ) -> list[str]:
    """The seat's Hokm screen: seats, trump, scores, tricks, the trick, the hand, legal moves."""
    rules = view.rules
    lines = [f"── Hokm · round {view.round} · match to {rules.target_score} ──"]
    lines.append(seats_line(view.players, view.seat, table))
    hakem = f"seat {view.hakem}" if view.HasField("hakem") else "-"
    lines.append(f"Hakem: {hakem} · Trump: {suit_name(view.trump)}")
    teams = partnerships(view)
    lines.append("Scores: " + side_figures(view.scores, teams, view.seat, shared=True))
    lines.append("Tricks: " + side_figures(view.tricks_won, teams, view.seat, shared=False))
    if view.HasField("top_a") or view.HasField("top_b"):
        tops = [card_name(view.top_a) if view.HasField("top_a") else "-",
                card_name(view.top_b) if view.HasField("top_b") else "-"]
        lines.append(f"Piles: A {tops[0]} · B {tops[1]} · {view.pile_size} left")
    plays = ", ".join(f"{p.seat} {card_name(p.card)}" for p in view.current_trick.plays)
    lines.append(f"Trick: {plays or '(empty)'}")
    hand = sorted_hokm_hand(view.hand, view.trump)
    lines.append("Your hand: " + " ".join(card_name(c) for c in hand))
    turn = f"seat {view.turn}" + (" (you)" if view.turn == view.seat else "")
    if view.HasField("turn"):
        lines.append(f"Turn: {turn}{timer_text(view.deadline_ms, now_ms)}")
    if view.legal:
        lines.append("Legal: " + "  ".join(
            f"{i}) {hokm_label(c)}" for i, c in enumerate(ordered_legal(view), 1)))
    return lines


def meld_text(cards: Sequence[int]) -> str:
    """Cards of a meld in order."""
    return " ".join(hand_card_name(c) for c in cards)


def hand_label(command: hand_pb2.HandCommand, view: hand_pb2.HandView) -> str:
    """One legal Hand command as a menu entry."""
    kind = command.WhichOneof("kind")
    if kind == "draw_from_stock":
        return "draw from stock"
    if kind == "take_discard":
        top = hand_card_name(view.discard_pile[-1]) if view.discard_pile else "?"
        return f"take discard {top}"
    if kind == "lay_melds":
        return "lay " + " | ".join(meld_text(m.cards) for m in command.lay_melds.melds)
    if kind == "lay_off":
        return f"lay off {hand_card_name(command.lay_off.card)} on meld {command.lay_off.meld_id}"
    if kind == "retrieve_joker":
        cards = meld_text(command.retrieve_joker.cards)
        return f"retrieve joker from meld {command.retrieve_joker.meld_id} with {cards}"
    if kind == "discard":
        return f"discard {hand_card_name(command.discard.card)}"
    return str(kind)


def hand_screen(view: hand_pb2.HandView, table: lobby_pb2.Table | None, now_ms: int
                ) -> list[str]:
    """The seat's Hand screen: seats, totals, table melds, discard, hand, legal moves."""
    lines = [f"── Hand · round {view.round} of {view.rules.rounds} · dealer seat {view.dealer} ──"]
    lines.append(seats_line(view.players, view.seat, table))
    lines.append("Totals: " + side_figures(view.totals, partnerships(view), view.seat,
                                           shared=True))
    opened = [str(s) for s, o in enumerate(view.opened) if o]
    lines.append(f"Opened: {', '.join(opened) or 'nobody'} · stock {view.stock_count}")
    for meld in view.melds:
        lines.append(f"Meld {meld.id} (seat {meld.owner}): {meld_text(meld.cards)}")
    top = hand_card_name(view.discard_pile[-1]) if view.discard_pile else "(empty)"
    lines.append(f"Discard: {top}")
    lines.append("Your hand: " + meld_text(sorted_hand_cards(view.hand)))
    if view.HasField("turn"):
        turn = f"seat {view.turn}" + (" (you)" if view.turn == view.seat else "")
        lines.append(f"Turn: {turn}{timer_text(view.deadline_ms, now_ms)}")
    if view.legal:
        lines.append("Legal:")
        lines.extend(
            f"  {i}) {hand_label(c, view)}" for i, c in enumerate(ordered_legal(view), 1)
        )
    return lines


def _hokm_event(event: hokm_pb2.HokmEvent, teams: Teams | None) -> str | None:
    kind = event.WhichOneof("kind")
    if kind == "hakem_chosen":
        return f"Hakem: seat {event.hakem_chosen.seat}"
    if kind == "trump_declared":
        return f"Trump: {suit_name(event.trump_declared.suit)}"
    if kind == "card_played":
        return f"seat {event.card_played.seat} plays {card_name(event.card_played.card)}"
    if kind == "trick_taken":
        return f"seat {event.trick_taken.seat} takes trick {event.trick_taken.trick}"
    if kind == "round_ended":
        ended = event.round_ended
        return (f"Round {ended.round} over: {winners_text(ended.winners, teams)} won · "
                f"scores {side_figures(ended.scores, teams, shared=True)}")
    if kind == "match_ended":
        return f"Match over: {winners_text(event.match_ended.winners, teams)} won"
    if kind == "round_started":
        return f"Round {event.round_started.round}"
    return None


def _hand_event(event: hand_pb2.HandEvent, teams: Teams | None) -> str | None:
    kind = event.WhichOneof("kind")
    if kind == "card_drawn":
        drawn = event.card_drawn
        source = "the discard" if drawn.from_discard else "the stock"
        card = f" {hand_card_name(drawn.card)}" if drawn.HasField("card") else ""
        return f"seat {drawn.seat} draws{card} from {source}"
    if kind == "melds_laid":
        laid = event.melds_laid
        return f"seat {laid.seat} lays " + " | ".join(meld_text(m.cards) for m in laid.melds)
    if kind == "card_laid_off":
        off = event.card_laid_off
        return f"seat {off.seat} lays off {hand_card_name(off.card)} on meld {off.meld.id}"
    if kind == "joker_retrieved":
        return f"seat {event.joker_retrieved.seat} retrieves a joker"
    if kind == "card_discarded":
        discarded = event.card_discarded
        return f"seat {discarded.seat} discards {hand_card_name(discarded.card)}"
    if kind == "round_ended":
        ended = event.round_ended
        return (f"Round {ended.round} over: totals "
                f"{side_figures(ended.totals, teams, shared=True)}")
    if kind == "match_ended":
        return f"Match over: {winners_text(event.match_ended.winners, teams)} won"
    if kind == "round_started":
        return f"Round {event.round_started.round}"
    return None


_SEAT_CONTROL_REASONS = {
    log_pb2.SEAT_CONTROL_REASON_DISCONNECTED: "disconnected",
    log_pb2.SEAT_CONTROL_REASON_TIMED_OUT: "timed out",
    log_pb2.SEAT_CONTROL_REASON_LEFT: "left",
    log_pb2.SEAT_CONTROL_REASON_RECONNECTED: "reconnected",
    log_pb2.SEAT_CONTROL_REASON_REJOINED: "rejoined",
}


def _seat_control_line(control: log_pb2.SeatControl) -> str:
    reason = _SEAT_CONTROL_REASONS.get(control.reason)
    why = f" ({reason})" if reason else ""
    if control.bot:
        return f"a {control.bot_level} bot plays seat {control.seat}{why}"
    return f"seat {control.seat} is its player's again{why}"


def event_line(event: log_pb2.Event, teams: Teams | None = None) -> str | None:
    """One line for a (redacted) event, or None for events not worth a line; ``teams``
    (:func:`partnerships`) lists a partnership game's figures per team."""
    if event.HasField("seat_control"):
        return _seat_control_line(event.seat_control)
    game = event.WhichOneof("game")
    text = (_hokm_event(event.hokm, teams) if game == "hokm"
            else _hand_event(event.hand, teams))
    if text is not None and event.automatic:
        text += " (automatic)"
    return text
