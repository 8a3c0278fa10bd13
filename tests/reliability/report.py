"""The reliability report: what ran, what was broken, and what held, as Markdown."""

from __future__ import annotations

import datetime
from collections import Counter

from tests.reliability.run import RunResult


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _by_count(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counter.most_common()) or "none"


def render(result: RunResult, command: str) -> str:
    findings = result.findings
    options = result.options
    kinds = Counter(fault.kind for fault in result.faults)
    verdict = ("**Held**: every match finished; 0 lost, 0 duplicated, 0 unverifiable."
               if result.held else f"**Did not hold**: {len(result.problems)} problems below.")
    lines = [
        "# Reliability report",
        "",
        "Produced by the reliability suite (`tests/reliability/`): the whole system as separate",
        "processes on loopback (a private nats-server and PostgreSQL cluster, "
        f"{result.processes} dast processes: {', '.join(result.services)}), loaded with bot",
        "matches of every variant, a person's match and idle watcher streams, attacked by",
        "hostile clients, and broken by the faults below while it ran.",
        "",
        f"Reproduce: `{command}`",
        "",
        f"Run of {datetime.date.today().isoformat()}: {result.wall_s} s of wall time, "
        f"seed {options.seed}.",
        "",
        verdict,
        "",
        "## Outcome",
        "",
        *_table(("what", "count"), [
            ("matches (finished / started)", f"{findings.finished} / {findings.matches}"),
            ("events stored", findings.events),
            ("events lost (SQL or JetStream)", findings.lost),
            ("events duplicated (SQL or JetStream)", findings.duplicated),
            ("logs that do not verify (chain, commitment, deals, seal, receipts)",
             findings.unverifiable),
            ("stats projections and ratings equal to their recomputation from the logs",
             "yes" if findings.stats_checked else "no"),
            ("events sent to watchers", findings.watcher_events),
            ("watcher reconnections (each resumed from its last seq)",
             findings.watcher_reconnections),
            ("moves the person made", result.person_moves),
            ("the person's seat handed to a bot (its replica paused) / given back",
             f"{result.person_takeovers} / {result.person_returns}"),
            ("moves the person on a Play stream made / streams it opened again (of which "
             "silent or an outcome overdue) / commands it sent again after a retryable refusal",
             f"{result.play_person_moves} / {result.play_person_reconnections} "
             f"({result.play_person_stuck}) / {result.play_person_retried}"),
            ("hostile requests", result.hostile_sent),
        ]),
        "",
        "## Faults injected",
        "",
        *_table(("kind", "times"), sorted(kinds.items())),
        "",
        *_table(("at (s)", "fault", "target", "until every process answered again (s)"),
                [(fault.at_s, fault.kind, fault.target, fault.recovered_s)
                 for fault in result.faults]),
        "",
        "## Statuses",
        "",
        f"- Hostile requests by status: {_by_count(result.hostile_statuses)}.",
        f"- Failed calls of the load's own clients, all retried: "
        f"{_by_count(result.load_failures)}. Only UNAVAILABLE, DEADLINE_EXCEEDED and "
        "CANCELLED (a process killed, paused or cut off) are expected there.",
        f"- Refusals the load's clients expect and act on (a person's move after a lost "
        f"race: they looked again; a retried CreateGame whose first attempt was stored): "
        f"{_by_count(result.load_handled)}.",
        "",
    ]
    if result.problems:
        lines += ["## Problems", "", *(f"- {problem}" for problem in result.problems), ""]
    return "\n".join(lines)
