"""The same seed, field and results give the same log, byte for byte, today and in every
later version: an audit re-derives old logs with new code, so a change to any rule that
moves a choice must show up here (and needs a new rules version, not a silent edit)."""

from __future__ import annotations

import hashlib

from engine.core.rng import DeterministicRandom
from engine.tournament import (
    Entry,
    Format,
    TournamentOptions,
    encode_event,
    hand_spec,
    hokm_spec,
)
from engine.tournament.sim import TournamentRun, play_out

EXPECTED_DIGEST = "dad4437318a77a268597365b360d3b4d5afa9debc2a34fe83459a402bba532a1"
"""sha256 of the encoded logs below, recorded when the rules were written."""


def test_logs_of_a_fixed_seed_and_results_never_change() -> None:
    digest = hashlib.sha256()
    for format_ in Format:
        for entry in Entry:
            for variant in (hokm_spec(4), hokm_spec(3), hand_spec(4)):
                options = TournamentOptions(
                    variant=variant,
                    format=format_,
                    entry=entry,
                    fill_with_bots=entry is Entry.INDIVIDUALS,
                )
                run = TournamentRun("d", options, b"k" * 32)
                run.register_field(13)
                play_out(run, DeterministicRandom(b"r", "r"))
                for event in run.events:
                    digest.update(encode_event(event))
    assert digest.hexdigest() == EXPECTED_DIGEST
