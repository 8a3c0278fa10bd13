"""A corpus of sealed exports of every variant, and the ways to tamper with one.

The logs are played by the engines directly (no network): random and greedy bots over
varied rules (every Hokm hakem selection, random partners, both two-player trump modes,
Hand with and without partnerships, short matches so that the corpus is quick), with
client seeds mixed in and, in some matches, a seat taken over by a bot and handed back
(seat-control events, as the game service writes them). Each log is chained and sealed
with a test key exactly as ``dast export`` writes it (:mod:`engine.core.logformat`).

The tamperings are what an editor of the file can do: change a card, drop, reorder or
swap events, change the revealed seed, change a score, remove the seal. Each comes as
the raw edit and, where the edit would otherwise be caught by the chain alone, also
re-chained with the revealed seed (anyone can do that; the seal or the deals catch it).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from google.protobuf import json_format
from google.protobuf.message import Message

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from engine.core.chain import chain_log
from engine.core.control import seat_control_command
from engine.core.logformat import dump_jsonl
from engine.core.payload import put
from engine.core.rng import DeterministicRandom
from engine.core.seal import seal_message
from engine.hand.bots import BOTS as HAND_BOTS
from engine.hokm.bots import BOTS as HOKM_BOTS
from engine.registry import GAMES_BY_NAME

_AT_MS = 1_767_225_600_000

H = hokm_pb2
VARIANTS: dict[str, tuple[str, int, list[Message]]] = {
    # name: (game, seats, rules cycled through the variant's matches)
    "hokm-4p": ("hokm", 4, [
        H.HokmRules(target_score=2),
        H.HokmRules(target_score=2, random_partners=True,
                    hakem_selection=H.HAKEM_SELECTION_ACE_IN_FIVE),
        H.HokmRules(target_score=2, hakem_selection=H.HAKEM_SELECTION_RANDOM,
                    hakem_rotation=H.HAKEM_ROTATION_REDETERMINE),
        H.HokmRules(target_score=3, hakem_selection=H.HAKEM_SELECTION_ACE_IN_FIVE,
                    hakem_rotation=H.HAKEM_ROTATION_REDETERMINE, play_all_tricks=True),
    ]),
    "hokm-3p": ("hokm", 3, [
        H.HokmRules(variant=H.HOKM_VARIANT_THREE_PLAYERS, target_score=2),
        H.HokmRules(variant=H.HOKM_VARIANT_THREE_PLAYERS, target_score=2,
                    hakem_selection=H.HAKEM_SELECTION_RANDOM,
                    hakem_rotation=H.HAKEM_ROTATION_REDETERMINE),
    ]),
    "hokm-2p": ("hokm", 2, [
        H.HokmRules(variant=H.HOKM_VARIANT_TWO_PLAYERS, target_score=2),
        H.HokmRules(variant=H.HOKM_VARIANT_TWO_PLAYERS, target_score=2,
                    trump_2p=H.TRUMP_2P_HAKEM_DECLARES,
                    hakem_selection=H.HAKEM_SELECTION_ACE_IN_FIVE),
    ]),
    "hand-2p": ("hand", 2, [hand_pb2.HandRules(rounds=1), hand_pb2.HandRules(rounds=2)]),
    "hand-3p": ("hand", 3, [hand_pb2.HandRules(rounds=1)]),
    "hand-4p": ("hand", 4, [hand_pb2.HandRules(rounds=1),
                            hand_pb2.HandRules(rounds=2, max_restocks=0)]),  # void rounds
    "hand-4p-partners": ("hand", 4, [hand_pb2.HandRules(rounds=1, partnerships=True)]),
}
_BOTS: dict[str, dict[str, Any]] = {"hokm": dict(HOKM_BOTS), "hand": dict(HAND_BOTS)}


@dataclass(frozen=True, slots=True)
class CorpusLog:
    """One sealed export of the corpus."""

    name: str
    variant: str
    text: str
    public_key: bytes


class Sealer:
    """Seals logs the way the server does (engine/core/seal.py), with its own key."""

    def __init__(self, private_key: Ed25519PrivateKey | None = None) -> None:
        self._key = private_key or Ed25519PrivateKey.generate()
        self.public_key = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def seal(self, game_id: str, entries: list[log_pb2.LogEntry]) -> log_pb2.LogSeal:
        last = entries[-1]
        message = seal_message(game_id, last.event.seq, last.hash)
        return log_pb2.LogSeal(game_id=game_id, seq=last.event.seq, head_hash=last.hash,
                               public_key=self.public_key, signature=self._key.sign(message))


def play_logged(variant: str, index: int) -> list[log_pb2.Event]:
    """Match ``index`` of ``variant``: bots over the variant's rules (cycled), with client
    seeds; every third match hands a seat to a bot mid-match and back."""
    game_name, seats, rules_cycle = VARIANTS[variant]
    game = GAMES_BY_NAME[game_name]  # seat control included, as the service plays it
    bots = _BOTS[game_name]
    names = ["random", "greedy"]
    seed = hashlib.sha256(f"corpus/{variant}/{index}".encode()).digest()
    players = [
        common_pb2.Player(player_id=f"{variant}-{index}-{seat}", display_name=f"Player {seat}",
                          client_seed=f"c{index}-{seat}".encode() if (index + seat) % 3 else b"")
        for seat in range(seats)
    ]
    policies = [bots[names[(seat + index) % 2]] for seat in range(seats)]
    rngs = [DeterministicRandom(seed, f"bot/{seat}") for seat in range(seats)]
    events = game.start(rules_cycle[index % len(rules_cycle)], seed, players, at_ms=_AT_MS)
    state = game.replay(events)
    takeover = 7 + index % 11 if index % 3 == 0 else -1
    taken_seat = -1
    for step in range(100_000):
        seat = game.to_act(state)
        if seat is None:
            return events
        at_ms = _AT_MS + (step + 1) * 1000
        if step == takeover:
            taken_seat = seat
            command = seat_control_command(seat, bot=True, bot_level="basic", reason=2,
                                           requested_by="service:timer", at_ms=at_ms)
        elif step == takeover + 5 and taken_seat >= 0:
            command = seat_control_command(taken_seat, bot=False, reason=4,
                                           requested_by=f"player:{players[taken_seat].player_id}",
                                           at_ms=at_ms)
        else:
            payload = policies[seat](game.view(state, seat), rngs[seat])
            command = log_pb2.Command(seat=seat, at_ms=at_ms, automatic=step % 5 == 0)
            put(command, game.SCHEMA, payload)
        for event in game.decide(state, command):
            state = game.evolve(state, event)
            events.append(event)
    raise RuntimeError(f"{variant} match {index} did not end")


def export_text(events: list[log_pb2.Event], sealer: Sealer | None, game_id: str) -> str:
    """The JSON Lines export of ``events``: chained, sealed when ``sealer`` is given."""
    entries = chain_log(events)
    return dump_jsonl(entries, sealer.seal(game_id, entries) if sealer else None)


def build_corpus(per_variant: int, sealer: Sealer) -> list[CorpusLog]:
    """``per_variant`` sealed logs of every variant."""
    corpus = []
    for variant in VARIANTS:
        for index in range(per_variant):
            name = f"{variant}-{index:03d}"
            text = export_text(play_logged(variant, index), sealer, f"game-{name}")
            corpus.append(CorpusLog(name, variant, text, sealer.public_key))
    return corpus


# ---- tampering ----

def _lines(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    seal = rows.pop()["seal"] if rows and set(rows[-1]) == {"seal"} else None
    return rows, seal


def _text(rows: list[dict[str, Any]], seal: dict[str, Any] | None) -> str:
    lines = [json.dumps(row, sort_keys=True) for row in rows]
    if seal is not None:
        lines.append(json.dumps({"seal": seal}, sort_keys=True))
    return "".join(line + "\n" for line in lines)


def rechain(rows: list[dict[str, Any]], seal: dict[str, Any] | None) -> str:
    """The rows' events chained again from the seed their first event records (anyone
    holding the finished log can), with the original seal left as it was."""
    events = [json_format.ParseDict(row["event"], log_pb2.Event()) for row in rows]
    rechained = chain_log(events)
    seal_message_ = json_format.ParseDict(seal, log_pb2.LogSeal()) if seal else None
    return dump_jsonl(rechained, seal_message_)


def _inner(row: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    event = row["event"]
    for game in ("hokm", "hand"):
        if game in event:
            kind, body = next(iter(event[game].items()))
            return kind, body
    return None


def _find(rows: list[dict[str, Any]], kinds: tuple[str, ...]) -> int:
    return next(i for i, row in enumerate(rows) if (k := _inner(row)) and k[0] in kinds)


def _edit_card(rows: list[dict[str, Any]]) -> None:
    # A card played (Hokm) or discarded (Hand) replaced by another card.
    index = _find(rows, ("cardPlayed", "cardDiscarded"))
    body = _inner(rows[index])[1]  # type: ignore[index]
    body["card"] = (body.get("card", 0) + 1) % 52


def _edit_dealt_card(rows: list[dict[str, Any]]) -> None:
    # Two cards swapped between the first two hands of a deal (a rigged deal).
    index = _find(rows, ("cardsDealt",))
    body = _inner(rows[index])[1]  # type: ignore[index]
    hands = body["hands"]
    if len(hands) >= 2:
        hands[0]["cards"][0], hands[1]["cards"][0] = hands[1]["cards"][0], hands[0]["cards"][0]
    else:
        hands[0]["cards"][0] = (hands[0]["cards"][0] + 13) % 52


def _drop_event(rows: list[dict[str, Any]]) -> None:
    del rows[len(rows) // 2]


def _reorder_events(rows: list[dict[str, Any]]) -> None:
    # A later event moved earlier, every seq left as written.
    middle = len(rows) // 2
    rows.insert(middle - 3, rows.pop(middle))


def _swap_events(rows: list[dict[str, Any]]) -> None:
    # Two neighbouring events exchanged, their seqs renumbered to look continuous.
    middle = len(rows) // 2
    rows[middle], rows[middle + 1] = rows[middle + 1], rows[middle]
    rows[middle]["event"]["seq"], rows[middle + 1]["event"]["seq"] = (
        rows[middle + 1]["event"]["seq"], rows[middle]["event"]["seq"])


def _change_seed(rows: list[dict[str, Any]]) -> None:
    body = _inner(rows[-1])[1]  # type: ignore[index]
    seed = bytearray(base64.b64decode(body["serverSeed"]))
    seed[0] ^= 1
    body["serverSeed"] = base64.b64encode(bytes(seed)).decode()


def _change_score(rows: list[dict[str, Any]]) -> None:
    # The final totals of the match: Hokm scores, Hand totals.
    body = _inner(rows[-1])[1]  # type: ignore[index]
    key = "scores" if "scores" in body else "totals"
    body[key][0] = body[key][0] + 1


Edit = Callable[[list[dict[str, Any]]], None]
EDITS: dict[str, Edit] = {
    "edited card": _edit_card,
    "edited dealt card": _edit_dealt_card,
    "dropped event": _drop_event,
    "reordered events": _reorder_events,
    "swapped events": _swap_events,
    "changed seed": _change_seed,
    "changed score": _change_score,
}


def tamperings(text: str) -> Iterator[tuple[str, str]]:
    """Every tampered copy of an export: (what was done, the copy's text)."""
    for name, edit in EDITS.items():
        rows, seal = _lines(text)
        edit(rows)
        yield name, _text(rows, seal)
        if name != "dropped event":  # re-chaining a dropped event is "reordered"/"swapped"
            rows, seal = _lines(text)
            edit(rows)
            if name in ("swapped events", "reordered events"):
                for seq, row in enumerate(rows, start=1):
                    row["event"]["seq"] = str(seq)
            yield f"{name}, re-chained", rechain(rows, seal)
    rows, _ = _lines(text)
    yield "removed seal", _text(rows, None)
