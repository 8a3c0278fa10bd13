"""Errors as gRPC statuses carrying ``google.rpc.Status`` details.

Every failure a client may act on leaves the server as a standard status code plus a
``google.rpc.ErrorInfo`` with ``domain = "dast"`` and a stable ``reason`` (the engine's
violation code, or one of :class:`Reason` for failures outside the rules)::

    InvalidCommand        → INVALID_ARGUMENT     reason = the engine code
    RuleViolation         → FAILED_PRECONDITION  reason = the engine code
    ServiceError(status)  → status               reason = a Reason

Handlers raise; :func:`abort_with` turns the exception into the status.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from engine.core.errors import InvalidCommand, RuleViolation

DOMAIN: Final = "dast"


class Reason(StrEnum):
    """Stable reasons of failures that are not rule violations."""

    GAME_NOT_FOUND = "game_not_found"
    GAME_EXISTS = "game_exists"
    STALE_EXPECTED_SEQ = "stale_expected_seq"
    CONCURRENT_COMMAND = "concurrent_command"
    NOT_YOUR_SEAT = "not_your_seat"
    NOT_SEATED = "not_seated"
    ROLE_REQUIRED = "role_required"
    GAME_NOT_OVER = "game_not_over"
    INVALID_REQUEST = "invalid_request"
    UNKNOWN_GAME_TYPE = "unknown_game_type"
    INTERNAL = "internal"


class ServiceError(Exception):
    """A failure with a chosen status code and reason.

    :param code: the gRPC status code.
    :param reason: the stable reason sent in ``ErrorInfo``.
    :param message: for people.
    """

    def __init__(self, code: grpc.StatusCode, reason: StrEnum | str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = str(reason)
        self.message = message


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str, str]:
    """(status code, reason, message) of an exception a handler raised."""
    if isinstance(exc, ServiceError):
        return exc.code, exc.reason, exc.message
    if isinstance(exc, InvalidCommand):
        return grpc.StatusCode.INVALID_ARGUMENT, exc.code, exc.message
    if isinstance(exc, RuleViolation):
        return grpc.StatusCode.FAILED_PRECONDITION, exc.code, exc.message
    return grpc.StatusCode.INTERNAL, Reason.INTERNAL, "internal error"


def rich_status(code: grpc.StatusCode, reason: str, message: str) -> grpc.Status:
    """A gRPC status whose details hold ``ErrorInfo(reason, domain="dast")``."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, code.name), message=message, details=[detail]
    )
    return rpc_status.to_status(status)


async def abort_with(context: grpc.aio.ServicerContext, exc: BaseException) -> NoReturn:
    """End the call with the rich status of ``exc``."""
    code, reason, message = status_of(exc)
    await context.abort_with_status(rich_status(code, reason, message))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


def reason_of(error: grpc.RpcError) -> str | None:
    """The ``ErrorInfo.reason`` a failed call carries (client side), if any."""
    status = rpc_status.from_call(error)
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return None
