"""Errors as gRPC statuses carrying ``google.rpc.Status`` details.

Every failure leaves the server as a standard status code plus a ``google.rpc.ErrorInfo``
with ``domain = "dast"`` and a stable ``reason`` (the engine's violation code, or one of
:class:`Reason` for failures outside the rules); this module is the one place that maps
exceptions to statuses::

    ServiceError(code, reason)  → code                 reason = a Reason (or a service's)
    InvalidCommand              → INVALID_ARGUMENT     reason = the engine code
    RuleViolation               → FAILED_PRECONDITION  reason = the engine code
    GameNotFound                → NOT_FOUND            game_not_found
    GameExists                  → ALREADY_EXISTS       game_exists
    ConcurrencyConflict         → ABORTED              concurrent_command
    a type in map_exception()   → its code             its reason (a service's own errors)
    anything else               → INTERNAL             internal, message
                                                       "internal error (ref <id>)"

An unexpected exception never shows its text to the caller: :func:`abort_with` logs it
(with its traceback) under a fresh correlation id and sends only that id, in the message
and in ``ErrorInfo.metadata["ref"]``, so an operator finds the log line a user reports.
Refusals with a retry time (limits) also carry ``google.rpc.RetryInfo``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, NoReturn

import grpc
import structlog
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from engine.core.errors import InvalidCommand, RuleViolation
from services.platform.store import ConcurrencyConflict, GameExists, GameNotFound

DOMAIN: Final = "dast"
_log = structlog.get_logger(component="errors")


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
    SPECTATORS_NOT_ALLOWED = "spectators_not_allowed"
    """The match's table admits no spectators (only its seated players watch)."""
    INVALID_REQUEST = "invalid_request"
    """A field outside what its method accepts (``ErrorInfo.metadata["field"]`` names it)."""
    UNKNOWN_GAME_TYPE = "unknown_game_type"
    MALFORMED_REQUEST = "malformed_request"
    """The request's bytes do not parse as the method's message."""
    INVALID_DISPLAY_NAME = "invalid_display_name"
    UNKNOWN_ENUM_VALUE = "unknown_enum_value"
    UNAUTHENTICATED = "unauthenticated"
    """No bearer token."""
    TOKEN_EXPIRED = "token_expired"
    TOKEN_INVALID = "token_invalid"
    """Badly signed, malformed, or naming no player or an unknown role."""
    RATE_LIMITED = "rate_limited"
    TOO_MANY_STREAMS = "too_many_streams"
    INTERNAL = "internal"


class ServiceError(Exception):
    """A failure with a chosen status code and reason.

    :param code: the gRPC status code.
    :param reason: the stable reason sent in ``ErrorInfo``.
    :param message: for people.
    :param metadata: extra ``ErrorInfo.metadata`` (for example a correlation ``ref``).
    :param retry_after: seconds after which a retry may succeed (sent as ``RetryInfo``).
    """

    def __init__(
        self, code: grpc.StatusCode, reason: StrEnum | str, message: str, *,
        metadata: Mapping[str, str] | None = None, retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = str(reason)
        self.message = message
        self.metadata = dict(metadata or {})
        self.retry_after = retry_after


_MAPPED: dict[type[BaseException], tuple[grpc.StatusCode, str]] = {
    GameNotFound: (grpc.StatusCode.NOT_FOUND, Reason.GAME_NOT_FOUND),
    GameExists: (grpc.StatusCode.ALREADY_EXISTS, Reason.GAME_EXISTS),
    ConcurrencyConflict: (grpc.StatusCode.ABORTED, Reason.CONCURRENT_COMMAND),
}


def map_exception(kind: type[BaseException], code: grpc.StatusCode, reason: str) -> None:
    """Answer ``kind`` (and its subclasses) with ``code`` and ``reason``, its text as the
    message: for a service's own errors whose text is written for callers (a service
    declares them where it defines or imports them; the platform cannot import services)."""
    _MAPPED[kind] = (code, reason)


def known_error(exc: BaseException) -> ServiceError | None:
    """The :class:`ServiceError` ``exc`` stands for, or None when it is unexpected."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, InvalidCommand):
        return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, exc.code, exc.message)
    if isinstance(exc, RuleViolation):
        return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, exc.code, exc.message)
    for kind in type(exc).__mro__:
        mapped = _MAPPED.get(kind)
        if mapped is not None:
            return ServiceError(mapped[0], mapped[1], str(exc))
    return None


def internal_error(exc: BaseException, **log_fields: Any) -> ServiceError:
    """The INTERNAL answer to an unexpected ``exc``, logged with its traceback under a new
    correlation id; the answer carries the id and nothing of the exception."""
    ref = secrets.token_hex(6)
    _log.error("internal_error", ref=ref, error_type=type(exc).__name__, exc_info=exc,
               **log_fields)
    return ServiceError(grpc.StatusCode.INTERNAL, Reason.INTERNAL,
                        f"internal error (ref {ref})", metadata={"ref": ref})


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str, str]:
    """(status code, reason, message) of an exception a handler raised (an unexpected one
    as ``INTERNAL, internal, "internal error"``; :func:`abort_with` adds its reference)."""
    known = known_error(exc)
    if known is None:
        return grpc.StatusCode.INTERNAL, Reason.INTERNAL, "internal error"
    return known.code, known.reason, known.message


def rich_status(
    code: grpc.StatusCode, reason: str, message: str, *,
    metadata: Mapping[str, str] | None = None, retry_after: float | None = None,
) -> grpc.Status:
    """A gRPC status whose details hold ``ErrorInfo(reason, domain="dast", metadata)``, and
    ``RetryInfo`` when ``retry_after`` (seconds) is given."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata or {})
    details = [_packed(info)]
    if retry_after is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(max(0, round(retry_after * 1e9)))
        details.append(_packed(error_details_pb2.RetryInfo(retry_delay=delay)))
    status = status_pb2.Status(
        code=getattr(code_pb2, code.name), message=message, details=details
    )
    return rpc_status.to_status(status)


def _packed(detail: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


def status_for(error: ServiceError) -> grpc.Status:
    """The rich status answering ``error``."""
    return rich_status(error.code, error.reason, error.message, metadata=error.metadata,
                       retry_after=error.retry_after)


async def abort_with(
    context: grpc.aio.ServicerContext, exc: BaseException, **log_fields: Any
) -> NoReturn:
    """End the call with the rich status of ``exc``; an unexpected ``exc`` is logged (with
    ``log_fields``) and answered INTERNAL with a correlation id (:func:`internal_error`)."""
    known = known_error(exc)
    if known is None:
        known = internal_error(exc, **log_fields)
    await context.abort_with_status(status_for(known))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


def error_info_of(error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ``ErrorInfo`` a failed call carries (client side), if any."""
    status = rpc_status.from_call(error)
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    return None


def reason_of(error: grpc.RpcError) -> str | None:
    """The ``ErrorInfo.reason`` a failed call carries (client side), if any."""
    info = error_info_of(error)
    return None if info is None else str(info.reason)


def retry_after_of(error: grpc.RpcError) -> float | None:
    """The ``RetryInfo`` delay (seconds) a failed call carries (client side), if any."""
    status = rpc_status.from_call(error)
    if status is None:
        return None
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return float(retry.retry_delay.ToNanoseconds()) / 1e9
    return None
