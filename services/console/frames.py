"""What a replay frame shows an operator: the event, and each seat's hand and score."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Final

from google.protobuf import text_format

from dast.v1 import common_pb2, hokm_pb2, log_pb2, replay_pb2
from engine.core.cards import cards_text

VIEWPOINTS: Final = {
    replay_pb2.REPLAY_VIEWPOINT_TABLE: "Seen from above: every hand (the match is over).",
    replay_pb2.REPLAY_VIEWPOINT_SPECTATOR: "Seen as a spectator sees it: the hands stay "
    "hidden until the match is over.",
}


@dataclass(frozen=True)
class SeatLine:
    """One seat of a frame's table view."""

    seat: int
    player: str
    bot: bool
    cards: str
    tricks: str
    score: str


@dataclass(frozen=True)
class FrameView:
    """A replay frame made readable."""

    seq: int
    last_seq: int
    finished: bool
    event_kind: str
    event_text: str
    seats: tuple[SeatLine, ...]
    summary: str
    """The phase, trump and turn of the table (Hokm), or the view as text (other games)."""
    controls: tuple[str, ...]
    viewpoint: str
    """Whose eyes the frame shows (every hand once the match is over; a spectator's view
    while it is on)."""


def event_kind(event: log_pb2.Event) -> str:
    """What kind of event this is: ``seat_control``, or the game's event's name."""
    if event.HasField("seat_control"):
        return "seat_control"
    game = event.WhichOneof("game")
    if game is None:
        return "event"
    kind = None
    with contextlib.suppress(ValueError):  # a packed event of another game has no "kind"
        kind = getattr(event, game).WhichOneof("kind")
    return f"{game}.{kind}" if kind else game


def frame_view(frame: replay_pb2.ReplayFrame) -> FrameView:
    """The readable form of ``frame`` (as the table sees it: every hand)."""
    seats: list[SeatLine] = []
    summary = ""
    hands = {view.seat: cards_text(view.hokm.hand) for view in frame.views
             if view.HasField("hokm") and view.HasField("seat") and view.hokm.hand}
    for view in frame.views:
        if view.HasField("hokm"):
            seats, summary = _hokm(view.hokm, hands)
            break
        summary = text_format.MessageToString(view, as_one_line=False)[:4000]
    controls = tuple(
        f"seat {control.seat}: {'bot' if control.bot else 'player'}"
        for control in frame.seat_control)
    return FrameView(
        seq=frame.seq, last_seq=frame.last_seq, finished=frame.finished,
        event_kind=event_kind(frame.event),
        event_text=text_format.MessageToString(frame.event, as_one_line=True)[:2000],
        seats=tuple(seats), summary=summary, controls=controls,
        viewpoint=VIEWPOINTS.get(frame.viewpoint, ""))


def _hokm(view: hokm_pb2.HokmView, hands: dict[int, str]) -> tuple[list[SeatLine], str]:
    seats = []
    for seat, player in enumerate(view.players):
        seats.append(SeatLine(
            seat=seat, player=player.display_name or player.player_id, bot=player.is_bot,
            cards=hands.get(seat) or _cards_of(view, seat),
            tricks=str(view.tricks_won[seat]) if seat < len(view.tricks_won) else "",
            score=str(view.scores[seat]) if seat < len(view.scores) else ""))
    parts = [f"round {view.round}", hokm_pb2.HokmPhase.Name(view.phase).removeprefix(
        "HOKM_PHASE_").lower().replace("_", " ")]
    if view.HasField("hakem"):
        parts.append(f"hakem: seat {view.hakem}")
    if view.trump:
        parts.append("trump: " + common_pb2.Suit.Name(view.trump).removeprefix("SUIT_").lower())
    if view.HasField("turn"):
        parts.append(f"to act: seat {view.turn}")
    if view.current_trick.plays:
        parts.append("on the table: " + ", ".join(
            f"seat {play.seat} {cards_text([play.card])}" for play in view.current_trick.plays))
    return seats, "; ".join(parts)


def _cards_of(view: hokm_pb2.HokmView, seat: int) -> str:
    """The seat's cards when the view shows them (the table's view shows every hand)."""
    if view.seat == seat and view.hand:
        return cards_text(view.hand)
    count = view.hand_counts[seat] if seat < len(view.hand_counts) else 0
    return f"{count} cards"
