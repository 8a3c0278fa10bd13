"""The gRPC ``dast.v1.AuditService``: every check of ``dast verify``, run by the server.

Both methods run :func:`engine.core.verification.verify_export`, the one implementation
behind ``dast verify`` and ``dast audit``, in a worker thread (re-running a match is CPU
work that must not hold up the event loop), and answer with its report (audit.proto):

- ``AuditGame`` audits a stored, finished match as ``ExportLog`` would export it now:
  sealed with this server's key and checked against that key and the caller's receipts.
  The same callers may audit a match as may replay it
  (:func:`services.game.replay.watched_head`); a running match has no revealed seed to
  check, so it is refused until it ends.
- ``AuditExport`` audits a log the caller uploads (any authenticated caller: the file is
  theirs already), against this server's key. The server's message limit bounds its size.

A log that fails a check is a report saying so, not an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

import grpc

from dast.v1 import audit_pb2, audit_pb2_grpc, log_pb2
from engine.core.logformat import Receipt
from engine.core.verification import report_message, verify_export
from services.game.replay import watched_head
from services.game.repository import GameRepository
from services.platform.auth import current_identity
from services.platform.errors import Reason, ServiceError
from services.platform.keys import LogSigner
from services.platform.validation import quoted_input

SERVICE_NAME: Final[str] = audit_pb2.DESCRIPTOR.services_by_name["AuditService"].full_name
TRUSTED_KEY_NAME: Final = "this server's signing key (GetSigningKey)"
_HASH_BYTES: Final = 32


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


def receipts_of(messages: Sequence[audit_pb2.SeatReceipt]) -> list[Receipt]:
    """The receipts a request carries.

    :raises ServiceError: INVALID_ARGUMENT for a receipt without a seq or a 32-byte hash.
    """
    receipts = []
    for index, message in enumerate(messages):
        if message.seq < 1 or len(message.hash) != _HASH_BYTES:
            raise _invalid(f"receipts[{index}]: a receipt has a seq from 1 and a "
                           f"{_HASH_BYTES}-byte hash")
        receipts.append(Receipt(message.seq, message.hash))
    return receipts


class AuditService(audit_pb2_grpc.AuditServiceServicer):
    """The servicer over the game service's repository and signing key."""

    def __init__(self, repository: GameRepository, signer: LogSigner) -> None:
        self.repository = repository
        self.signer = signer

    async def AuditGame(
        self, request: audit_pb2.AuditGameRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.AuditGameResponse:
        _, head = await watched_head(self.repository, request.game_id)
        if not head.is_over:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, Reason.GAME_NOT_OVER,
                f"game {quoted_input(head.game_id)} is not over: its server seed is not "
                "revealed yet",
            )
        receipts = receipts_of(request.receipts)
        loaded = await asyncio.to_thread(self.repository.store.load, head.game_id, 0)
        entries = [entry for entry in loaded if entry.event.seq <= head.seq]
        seal = self.signer.seal(head.game_id, head.seq, head.last_hash)
        report = await self._audit(entries, seal, receipts, accept_unsealed=False)
        return audit_pb2.AuditGameResponse(report=report, seal=seal)

    async def AuditExport(
        self, request: audit_pb2.AuditExportRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.AuditExportResponse:
        current_identity()
        if not request.entries:
            raise _invalid("entries: an export has at least one entry")
        receipts = receipts_of(request.receipts)
        seal = request.seal if request.HasField("seal") else None
        report = await self._audit(list(request.entries), seal, receipts,
                                   accept_unsealed=request.accept_unsealed)
        return audit_pb2.AuditExportResponse(report=report)

    async def _audit(
        self, entries: list[log_pb2.LogEntry], seal: log_pb2.LogSeal | None,
        receipts: list[Receipt], *, accept_unsealed: bool,
    ) -> audit_pb2.AuditReport:
        verification = await asyncio.to_thread(
            verify_export, entries, seal, trusted_key=self.signer.public_key,
            trusted_key_name=TRUSTED_KEY_NAME, receipts=receipts,
            accept_unsealed=accept_unsealed,
        )
        return report_message(verification)
