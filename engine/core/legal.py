"""Turning a game's legal entries into commands, whether or not it lists choice entries.

``legal(state, seat)`` may list a *choice entry* standing for many commands (see
:mod:`engine.core.protocol`): Hokm's three-player set-aside is one entry, "any 4 of these
20 cards", rather than 4,845 commands. :class:`LegalEntries` is how every caller (the
random-simulation harness, the benchmarks, tests) counts, lists, draws and looks up the
commands behind a list of entries, the same way for every game: for a game that does not
implement :class:`~engine.core.protocol.ChoiceEntries` each entry is one command.

>>> from engine import hokm
>>> from engine.core.testing import bot_players
>>> from dast.v1 import hokm_pb2
>>> rules = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS)
>>> state = hokm.replay(hokm.start(rules, bytes(32), bot_players(3)))
>>> entries = LegalEntries(hokm)
>>> for event in hokm.decide(state, hokm.legal(state, state.hakem)[0]):  # trump ♠
...     state = hokm.evolve(state, event)
>>> listed = hokm.legal(state, state.hakem)  # the set-aside: 4 of the hakem's 20 cards
>>> len(listed), entries.count(listed)
(1, 4845)
>>> command = entries.random(listed, lambda n: n - 1)  # the last: the 4 highest cards
>>> len(command.hokm.set_aside_cards.cards), entries.covers(listed, command)
(4, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from dast.v1 import log_pb2
from engine.core.protocol import ChoiceEntries, Game

Below = Callable[[int], int]
"""``below(n)``: a random int in ``0..n-1`` (``DeterministicRandom.randbelow``,
``random.Random.randrange``)."""


class LegalEntries:
    """The commands behind one game's legal entries.

    The game's capability is looked up once, here (a protocol check is slow), so that
    drawing a command in a hot loop costs at most one call to the game.
    """

    __slots__ = ("_choices",)

    def __init__(self, game: Game) -> None:
        self._choices: ChoiceEntries | None = game if isinstance(game, ChoiceEntries) else None

    def size(self, entry: log_pb2.Command) -> int:
        """How many commands ``entry`` stands for."""
        return 1 if self._choices is None else self._choices.entry_size(entry)

    def count(self, entries: Sequence[log_pb2.Command]) -> int:
        """How many commands ``entries`` stand for in all."""
        if self._choices is None:
            return len(entries)
        size = self._choices.entry_size
        return sum(size(entry) for entry in entries)

    def commands(self, entries: Sequence[log_pb2.Command]) -> Iterator[log_pb2.Command]:
        """Every command ``entries`` stand for: the entries' order, then each entry's."""
        choices = self._choices
        for entry in entries:
            if choices is None:
                yield entry
                continue
            for index in range(choices.entry_size(entry)):
                yield choices.entry_command(entry, index)

    def random(self, entries: Sequence[log_pb2.Command], below: Below) -> log_pb2.Command:
        """A random command of ``entries``: a uniform entry, then a uniform command of it.
        That is uniform over all the commands when every entry is plain or a choice entry
        is listed alone (as Hokm lists its set-aside).

        :raises ValueError: if ``entries`` is empty.
        """
        if not entries:
            raise ValueError("no legal entry to choose from")
        entry = entries[below(len(entries))]
        choices = self._choices
        if choices is None:
            return entry
        size = choices.entry_size(entry)
        return entry if size == 1 else choices.entry_command(entry, below(size))

    def covers(self, entries: Sequence[log_pb2.Command], command: log_pb2.Command) -> bool:
        """Whether ``command`` is one of the commands ``entries`` stand for."""
        choices = self._choices
        if choices is None:
            wanted = command.SerializeToString(deterministic=True)
            return any(e.SerializeToString(deterministic=True) == wanted for e in entries)
        return any(choices.entry_covers(entry, command) for entry in entries)
