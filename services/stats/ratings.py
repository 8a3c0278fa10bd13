"""Ratings with openskill's Plackett-Luce model: teams are rated as teams.

A match is rated once, when its final event is applied, from the teams the game names
(:attr:`engine.core.stats.MatchFrame.teams`: partners together, a lone seat alone) and their
ranks. Every seat is rated as its subject: a person, or ``bot:<level>`` for a bot seated
from the start, so each bot level gets a number on the players' own scale. A seat a bot
took over is still its person's.

A subject on two opposing teams of one match (two bots of the same level facing each other)
would be rated against itself: its rating stays as it was. The same subject twice in one
team (two such bots as partners) is updated once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from openskill.models import PlackettLuce

from services.stats.store import Rating

MODEL: Final = PlackettLuce()
"""openskill's defaults: mu 25, sigma 25/3; the ordinal is mu − 3·sigma."""


def fresh() -> Rating:
    """The rating of a subject never rated."""
    return Rating(MODEL.mu, MODEL.sigma, 0)


def ordinal(rating: Rating) -> float:
    """The conservative figure leaderboards sort by: mu − 3·sigma."""
    return rating.mu - 3.0 * rating.sigma


def rate(teams: Sequence[Sequence[str]], ranks: Sequence[int],
         current: dict[str, Rating]) -> dict[str, Rating]:
    """The new ratings of the subjects of a match.

    :param teams: the subjects of every team, in seat order within a team.
    :param ranks: every team's rank (0 best; equal ranks tie).
    :param current: every subject's rating before the match.
    :returns: the subjects whose rating changes, with their new rating.
    """
    if len(teams) != len(ranks) or len(teams) < 2:
        return {}
    team_of: dict[str, int] = {}
    shared: set[str] = set()
    for index, team in enumerate(teams):
        for subject in team:
            if team_of.setdefault(subject, index) != index:
                shared.add(subject)
    model_teams = [[MODEL.rating(mu=current[s].mu, sigma=current[s].sigma) for s in team]
                   for team in teams]
    rated = MODEL.rate(model_teams, ranks=[float(rank) for rank in ranks])
    updated: dict[str, Rating] = {}
    for team, results in zip(teams, rated, strict=True):
        for subject, result in zip(team, results, strict=True):
            if subject in shared or subject in updated:
                continue
            updated[subject] = Rating(result.mu, result.sigma, current[subject].rated + 1)
    return updated
