"""A straightforward pure-Python Hokm round, written the way published game environments
usually are, as the in-run baseline of ``bench/hokm_engine.py``.

Cards are small objects held in lists; legal moves are a list comprehension over the
hand; a step mutates the table in place; there is no event log, no validation beyond the
legal-move check, no views and no fairness record. It plays random legal four-player rounds
(the hakem declares the suit it holds most of, then 13 tricks, scored 1/2/3 like the real
game) so that its decisions per second measure the same work as the engine's hot path
without any of the guarantees. Running both in one process turns noisy absolute timings
into a ratio.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class NaiveCard:
    suit: int
    rank: int


class NaiveHokmRound:
    """One four-player round: ``legal_actions`` and ``step`` until ``done``."""

    def __init__(self, rng: random.Random) -> None:
        deck = [NaiveCard(suit, rank) for suit in range(4) for rank in range(13)]
        rng.shuffle(deck)
        self.hands = [deck[i * 13 : (i + 1) * 13] for i in range(4)]
        self.hakem = rng.randrange(4)
        counts = [sum(1 for c in self.hands[self.hakem] if c.suit == s) for s in range(4)]
        self.trump = counts.index(max(counts))
        self.turn = self.hakem
        self.trick: list[tuple[int, NaiveCard]] = []
        self.tricks_won = [0, 0, 0, 0]
        self.done = False

    def legal_actions(self) -> list[NaiveCard]:
        hand = self.hands[self.turn]
        if self.trick:
            led = self.trick[0][1].suit
            following = [card for card in hand if card.suit == led]
            if following:
                return following
        return list(hand)

    def step(self, card: NaiveCard) -> None:
        if card not in self.legal_actions():
            raise ValueError("illegal card")
        self.hands[self.turn].remove(card)
        self.trick.append((self.turn, card))
        if len(self.trick) < 4:
            self.turn = (self.turn + 1) % 4
            return
        led = self.trick[0][1].suit

        def strength(play: tuple[int, NaiveCard]) -> int:
            _, played = play
            if played.suit == self.trump:
                return 100 + played.rank
            return played.rank if played.suit == led else -1

        winner = max(self.trick, key=strength)[0]
        self.tricks_won[winner] += 1
        self.trick = []
        self.turn = winner
        team_tricks = [
            self.tricks_won[0] + self.tricks_won[2],
            self.tricks_won[1] + self.tricks_won[3],
        ]
        if max(team_tricks) >= 7:
            self.done = True


def play_random_rounds(decisions: int, seed: int = 1) -> int:
    """Play random legal rounds until ``decisions`` cards were played; return the count."""
    rng = random.Random(seed)
    made = 0
    while made < decisions:
        game = NaiveHokmRound(rng)
        while not game.done:
            actions = game.legal_actions()
            game.step(actions[rng.randrange(len(actions))])
            made += 1
    return made
