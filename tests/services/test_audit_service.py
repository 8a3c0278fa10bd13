"""AuditService over gRPC (services/game/audit.py): the checks of ``dast verify`` run by the
game service on a stored match or an uploaded export, and who may ask.

Matches are stored straight into the service's event store from the golden logs; an
operator who rewrites a stored log (and recomputes its chain) is played by storing a forged
one. The verdicts are the shared verification's (tests/services/test_audit_tampering.py
covers every kind of forgery): here, that the service runs it on the right log, against its
own key and the caller's receipts, and refuses what it must.
"""

from __future__ import annotations

from collections.abc import Awaitable

import grpc
import pytest

from dast.v1 import audit_pb2, audit_pb2_grpc, game_pb2, game_pb2_grpc, log_pb2
from engine.core.chain import chain_log
from engine.core.logformat import load_jsonl
from engine.core.seal import verify_seal
from engine.registry import game_of_event
from services.platform.auth import Role
from services.platform.errors import Reason, reason_of
from services.platform.keys import LogSigner
from tests.golden_logs import GOLDEN
from tests.services.game.conftest import Embedded, embedded, limiter
from tests.support.tokens import token

__all__ = ["embedded", "limiter"]  # the game service's fixtures, used here too

PASSED = audit_pb2.AUDIT_OUTCOME_PASSED
FAILED = audit_pb2.AUDIT_OUTCOME_FAILED
SKIPPED = audit_pb2.AUDIT_OUTCOME_SKIPPED


def _golden(name: str) -> list[log_pb2.LogEntry]:
    match = next(m for m in GOLDEN if m.name == name)
    return load_jsonl(match.path.read_text(encoding="utf-8"))


def _store(embedded: Embedded, game_id: str, entries: list[log_pb2.LogEntry], *,
           spectators_allowed: bool = True) -> None:
    game = game_of_event(entries[0].event)
    embedded.store.create_game(game_id, game.GAME_TYPE, entries,
                               spectators_allowed=spectators_allowed)


class Auditor:
    def __init__(self, embedded: Embedded, player_id: str, role: Role = Role.PLAYER) -> None:
        self.stub = audit_pb2_grpc.AuditServiceStub(embedded.channel)
        self.games = game_pb2_grpc.GameServiceStub(embedded.channel)
        self.metadata = (("authorization", f"Bearer {token(player_id, role)}"),)

    async def game(self, game_id: str, receipts: list[log_pb2.LogEntry] | None = None
                   ) -> audit_pb2.AuditGameResponse:
        request = audit_pb2.AuditGameRequest(game_id=game_id, receipts=[
            audit_pb2.SeatReceipt(seq=e.event.seq, hash=e.hash) for e in receipts or []])
        reply: audit_pb2.AuditGameResponse = await self.stub.AuditGame(
            request, metadata=self.metadata)
        return reply

    async def export(self, request: audit_pb2.AuditExportRequest) -> audit_pb2.AuditReport:
        reply: audit_pb2.AuditExportResponse = await self.stub.AuditExport(
            request, metadata=self.metadata)
        return reply.report

    async def exported(self, game_id: str) -> game_pb2.ExportLogResponse:
        reply: game_pb2.ExportLogResponse = await self.games.ExportLog(
            game_pb2.ExportLogRequest(game_id=game_id), metadata=self.metadata)
        return reply


async def _refused(call: Awaitable[object]) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code(), reason_of(caught.value)


def _outcomes(report: audit_pb2.AuditReport) -> dict[int, int]:
    return {check.check: check.outcome for check in report.checks}


async def test_a_stored_match_passes_every_check_and_comes_back_sealed(
    embedded: Embedded,
) -> None:
    entries = _golden("hokm_4p")
    _store(embedded, "g1", entries)
    player = Auditor(embedded, "hokm_4p-1")
    reply = await player.game("g1", receipts=entries[::5])
    report = reply.report
    assert report.verified and report.events == len(entries) and not report.findings
    assert _outcomes(report) == {
        audit_pb2.AUDIT_CHECK_CHAIN: PASSED, audit_pb2.AUDIT_CHECK_COMMITMENT: PASSED,
        audit_pb2.AUDIT_CHECK_DEALS: PASSED, audit_pb2.AUDIT_CHECK_SEAL: PASSED,
        audit_pb2.AUDIT_CHECK_RECEIPTS: PASSED,
    }
    receipts = next(c for c in report.checks if c.check == audit_pb2.AUDIT_CHECK_RECEIPTS)
    count = len(entries[::5])
    assert receipts.summary == f"{count} of {count} receipts match"
    assert verify_seal(reply.seal, embedded.service.signer.public_key) is None
    assert (reply.seal.seq, reply.seal.head_hash) == (entries[-1].event.seq, entries[-1].hash)
    without = (await player.game("g1")).report
    assert without.verified and _outcomes(without)[audit_pb2.AUDIT_CHECK_RECEIPTS] == SKIPPED


async def test_a_stored_log_rewritten_by_the_operator_fails_in_plain_words(
    embedded: Embedded,
) -> None:
    genuine = _golden("hokm_4p")
    events = [log_pb2.Event() for _ in genuine]
    for event, entry in zip(events, genuine, strict=True):
        event.CopyFrom(entry.event)
    index = next(i for i, e in enumerate(events) if e.hokm.WhichOneof("kind") == "round_ended")
    events[index].hokm.round_ended.scores[1] += 2
    _store(embedded, "rewritten", chain_log(events))  # the chain recomputed, as one can
    # The seat kept the receipts it was sent while the genuine match ran.
    report = (await Auditor(embedded, "hokm_4p-0").game("rewritten", receipts=genuine)).report
    assert not report.verified
    outcomes = _outcomes(report)
    assert outcomes[audit_pb2.AUDIT_CHECK_CHAIN] == PASSED  # recomputed: proves nothing
    assert outcomes[audit_pb2.AUDIT_CHECK_DEALS] == FAILED
    assert outcomes[audit_pb2.AUDIT_CHECK_RECEIPTS] == FAILED
    deals = next(f for f in report.findings if f.check == audit_pb2.AUDIT_CHECK_DEALS)
    seq = index + 1
    assert (deals.code, deals.seq) == ("event_differs", seq)
    assert deals.message.startswith(f"seq {seq}: the log's event is not the one")
    assert "hokm.round_ended.scores differs" in deals.message
    scores = list(genuine[index].event.hokm.round_ended.scores)
    assert deals.expected == "[" + ", ".join(map(str, scores)) + "]"
    scores[1] += 2
    assert deals.found == "[" + ", ".join(map(str, scores)) + "]"
    first_receipt = next(f for f in report.findings if f.check == audit_pb2.AUDIT_CHECK_RECEIPTS)
    assert first_receipt.seq == seq and first_receipt.code == "receipt_differs"


async def test_who_may_audit_a_stored_match(embedded: Embedded) -> None:
    entries = _golden("hokm_2p")
    _store(embedded, "running", entries[:50])
    _store(embedded, "private", entries, spectators_allowed=False)
    _store(embedded, "public", entries)
    stranger = Auditor(embedded, "stranger")
    assert await _refused(stranger.game("running")) == (
        grpc.StatusCode.FAILED_PRECONDITION, str(Reason.GAME_NOT_OVER))
    assert await _refused(Auditor(embedded, "root", Role.ADMIN).game("running")) == (
        grpc.StatusCode.FAILED_PRECONDITION, str(Reason.GAME_NOT_OVER))
    assert await _refused(stranger.game("private")) == (
        grpc.StatusCode.PERMISSION_DENIED, str(Reason.SPECTATORS_NOT_ALLOWED))
    assert await _refused(stranger.game("no-such-game")) == (
        grpc.StatusCode.NOT_FOUND, str(Reason.GAME_NOT_FOUND))
    assert (await stranger.game("public")).report.verified
    assert (await Auditor(embedded, "hokm_2p-1").game("private")).report.verified
    bad_receipt = audit_pb2.AuditGameRequest(
        game_id="public", receipts=[audit_pb2.SeatReceipt(seq=3, hash=b"short")])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stranger.stub.AuditGame(bad_receipt, metadata=stranger.metadata)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stranger.stub.AuditGame(audit_pb2.AuditGameRequest(game_id="public"))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_an_uploaded_export_is_checked_against_the_servers_key(
    embedded: Embedded,
) -> None:
    _store(embedded, "done", _golden("hand_2p"))
    player = Auditor(embedded, "stranger")
    exported = await player.exported("done")
    upload = audit_pb2.AuditExportRequest(entries=exported.entries, seal=exported.seal)
    assert (await player.export(upload)).verified

    edited = audit_pb2.AuditExportRequest()
    edited.CopyFrom(upload)
    discard = next(e for e in edited.entries if e.event.hand.WhichOneof("kind") ==
                   "card_discarded")
    discard.event.hand.card_discarded.card ^= 1
    report = await player.export(edited)
    chain = next(f for f in report.findings if f.check == audit_pb2.AUDIT_CHECK_CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", discard.event.seq)

    unsealed = audit_pb2.AuditExportRequest(entries=exported.entries)
    report = await player.export(unsealed)
    assert not report.verified
    assert [f.code for f in report.findings] == ["seal_missing"]
    unsealed.accept_unsealed = True
    report = await player.export(unsealed)
    assert report.verified and _outcomes(report)[audit_pb2.AUDIT_CHECK_SEAL] == SKIPPED

    other_key = LogSigner.generate().seal("done", exported.seal.seq, exported.seal.head_hash)
    report = await player.export(
        audit_pb2.AuditExportRequest(entries=exported.entries, seal=other_key))
    assert [f.code for f in report.findings] == ["seal_untrusted_key"]
    assert "another key than this server's signing key" in report.findings[0].message

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await player.export(audit_pb2.AuditExportRequest())
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
