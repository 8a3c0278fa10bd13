"""Reading a Hokm log back for the audit: ``setup_of``, ``command_for``, ``revealed_seed``."""

from __future__ import annotations

from dast.v1 import hokm_pb2, log_pb2
from engine.core.errors import Code, InvalidCommand
from engine.core.protocol import MatchSetup


def setup_of(first_event: log_pb2.Event) -> MatchSetup:
    """The arguments ``start`` was given, as the first event records them (players in the
    order given, before any ``random_partners`` seating).

    :raises InvalidCommand: (``wrong_game``) if the event is not a Hokm match start.
    """
    if first_event.WhichOneof("game") != "hokm" or (
        first_event.hokm.WhichOneof("kind") != "match_started"
    ):
        raise InvalidCommand(Code.WRONG_GAME, f"seq {first_event.seq} is no Hokm match start")
    started = first_event.hokm.match_started
    rules = hokm_pb2.HokmRules()
    rules.CopyFrom(started.rules)
    return MatchSetup(
        rules=rules,
        players=tuple(started.players),
        server_seed_commitment=started.fairness.server_seed_commitment,
        server_seed=started.fairness.server_seed,
        server_seed_chosen=started.fairness.server_seed_chosen,
    )


def command_for(event: log_pb2.Event) -> log_pb2.Command | None:
    """The command a player-caused event records (the first event of each command's
    batch): a declaration, a play, a set-aside or a pile taken. None for every event the
    rules cause by themselves."""
    hokm = event.hokm
    kind = hokm.WhichOneof("kind")
    command: hokm_pb2.HokmCommand
    if kind == "card_played":
        seat = hokm.card_played.seat
        command = hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=hokm.card_played.card))
    elif kind == "trump_declared" and not hokm.trump_declared.from_pile:
        seat = hokm.trump_declared.seat
        command = hokm_pb2.HokmCommand(
            declare_trump=hokm_pb2.DeclareTrump(suit=hokm.trump_declared.suit)
        )
    elif kind == "cards_set_aside":
        seat = hokm.cards_set_aside.seat
        command = hokm_pb2.HokmCommand(
            set_aside_cards=hokm_pb2.SetAsideCards(cards=hokm.cards_set_aside.cards)
        )
    elif kind == "pile_cards_taken":
        seat = hokm.pile_cards_taken.winner
        command = hokm_pb2.HokmCommand(
            take_pile_card=hokm_pb2.TakePileCard(pile=hokm.pile_cards_taken.winner_pile)
        )
    else:
        return None
    return log_pb2.Command(seat=seat, at_ms=event.at_ms, automatic=event.automatic, hokm=command)


def revealed_seed(event: log_pb2.Event) -> bytes | None:
    """The server seed the match's final event reveals (None for any other event)."""
    if event.WhichOneof("game") != "hokm" or event.hokm.WhichOneof("kind") != "match_ended":
        return None
    return event.hokm.match_ended.server_seed or None
