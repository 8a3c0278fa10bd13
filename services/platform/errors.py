"""Errors as gRPC statuses carrying ``google.rpc.Status`` details.

Every failure leaves the server as a standard status code plus a ``google.rpc.ErrorInfo``
with ``domain = "dast.dev"`` and a stable ``reason``; this module is the one place that maps
exceptions to statuses. Inside the services a reason is a code in lower snake case (the
engine's violation code, or one of :class:`Reason` for failures outside the rules); on the
wire it is the name of the matching ``dast.v1.ErrorReason`` value (protos/dast/v1/errors.proto),
``"ERROR_REASON_" + code.upper()`` (:func:`wire_reason`). The enum lists every code the
engines and services have; a code it lacks (a game registered at run time with codes of its
own) travels as ``ERROR_REASON_UNLISTED`` with the code in ``ErrorInfo.metadata["code"]``::

    ServiceError(code, reason)  → code                 reason = a Reason (or a service's)
    InvalidCommand              → INVALID_ARGUMENT     reason = the engine code
    RuleViolation               → FAILED_PRECONDITION  reason = the engine code
    GameNotFound                → NOT_FOUND            game_not_found
    GameExists                  → ALREADY_EXISTS       game_exists
    ConcurrencyConflict         → ABORTED              concurrent_command
    the database unreachable    → UNAVAILABLE          store_unavailable (+ RetryInfo)
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
import sqlite3
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, NoReturn

import grpc
import psycopg
import sqlalchemy.exc
import structlog
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from dast.v1 import errors_pb2
from engine.core.errors import InvalidCommand, RuleViolation
from services.platform.store import ConcurrencyConflict, GameExists, GameNotFound

DOMAIN: Final = "dast.dev"
"""``ErrorInfo.domain`` of every error a dast server sends."""
WIRE_PREFIX: Final = "ERROR_REASON_"
"""The prefix of every ``ErrorReason`` value's name (buf's enum value prefix)."""
UNLISTED: Final = "ERROR_REASON_UNLISTED"
"""The wire reason of a code ``ErrorReason`` does not list (its code in ``metadata``)."""
_WIRE_NAMES: Final = frozenset(errors_pb2.ErrorReason.keys())
STORE_RETRY_SECONDS: Final = 1.0
"""The RetryInfo delay of a call that met the database unreachable."""
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
    STORE_UNAVAILABLE = "store_unavailable"
    """The database was unreachable for a moment (restart, fail-over): retry the same call."""
    TOO_MANY_SPECTATORS = "too_many_spectators"
    """The match (or table) has as many spectators as this server admits for one."""
    ADDRESS_LIMITED = "address_limited"
    """The caller's network address holds its share of this server's streams or calls."""
    SERVER_BUSY = "server_busy"
    """This server holds all the streams, or handles all the calls, it serves well."""
    SESSION_REVOKED = "session_revoked"
    """The token's session was ended (signed out, or its refresh token reused): its access
    tokens stop working on every server before they expire."""
    PLAYER_BANNED = "player_banned"
    """An operator banned the player (:mod:`services.platform.bans`): every call of theirs is
    refused until the ban ends or is lifted."""
    ACCOUNT_DELETED = "account_deleted"
    """The token's player deleted their account (or an operator erased it)."""
    STREAM_BACKLOG = "stream_backlog"
    """A bidirectional stream's client fell so far behind reading that the server stopped
    queueing for it: open the stream again from the last seq received."""


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
    if _is_store_outage(exc):
        _log.warning("store_unavailable", error_type=type(exc).__name__)
        return ServiceError(grpc.StatusCode.UNAVAILABLE, Reason.STORE_UNAVAILABLE,
                            "the game store is unreachable for a moment; retry the call "
                            "(a command with the same command_id is applied once)",
                            retry_after=STORE_RETRY_SECONDS)
    for kind in type(exc).__mro__:
        mapped = _MAPPED.get(kind)
        if mapped is not None:
            return ServiceError(mapped[0], mapped[1], str(exc))
    return None


def _is_store_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is the database going away (a lost or refused connection, a server
    shutting down, SQLite busy) rather than a fault of the code: such a call is worth
    retrying. The store's writer holds raw driver connections, so the driver's own errors
    count as well as SQLAlchemy's wrappers of them."""
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        if isinstance(exc.orig, sqlite3.OperationalError):
            return _sqlite_busy(exc.orig)
        return isinstance(exc, sqlalchemy.exc.OperationalError)
    if isinstance(exc, psycopg.OperationalError):
        return True
    return isinstance(exc, sqlite3.OperationalError) and _sqlite_busy(exc)


def _sqlite_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite's transient errors (another writer holds the file) among its operational ones
    (which also cover faults of the code, such as a missing table)."""
    return "locked" in str(exc) or "busy" in str(exc)


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


def wire_name(reason: str) -> str:
    """The name ``reason`` (a code in lower snake case) has in ``dast.v1.ErrorReason``,
    whether or not the enum lists it."""
    return WIRE_PREFIX + reason.upper()


def is_listed(reason: str) -> bool:
    """Whether ``dast.v1.ErrorReason`` has a value for ``reason``."""
    return wire_name(reason) in _WIRE_NAMES


def wire_reason(reason: str) -> tuple[str, dict[str, str]]:
    """(``ErrorInfo.reason``, extra ``ErrorInfo.metadata``) of a code: its ``ErrorReason``
    value's name, or ``ERROR_REASON_UNLISTED`` with the code in ``metadata["code"]``."""
    name = wire_name(reason)
    if name in _WIRE_NAMES:
        return name, {}
    return UNLISTED, {"code": reason}


def code_of_wire(reason: str, metadata: Mapping[str, str]) -> str:
    """The code (lower snake case) an ``ErrorInfo`` reason names: the inverse of
    :func:`wire_reason` (a reason without the enum's prefix is returned as it is)."""
    if reason == UNLISTED:
        return metadata.get("code", "")
    if reason.startswith(WIRE_PREFIX):
        return reason[len(WIRE_PREFIX):].lower()
    return reason


def rich_status(
    code: grpc.StatusCode, reason: str, message: str, *,
    metadata: Mapping[str, str] | None = None, retry_after: float | None = None,
) -> grpc.Status:
    """A gRPC status whose details hold ``ErrorInfo(wire reason, domain="dast.dev",
    metadata)`` (:func:`wire_reason`), and ``RetryInfo`` when ``retry_after`` (seconds) is
    given."""
    return rpc_status.to_status(rich_status_message(
        code, reason, message, metadata=metadata, retry_after=retry_after))


def rich_status_message(
    code: grpc.StatusCode, reason: str, message: str, *,
    metadata: Mapping[str, str] | None = None, retry_after: float | None = None,
) -> status_pb2.Status:
    """:func:`rich_status` as the ``google.rpc.Status`` message (one a reply can carry)."""
    name, extra = wire_reason(reason)
    info = error_details_pb2.ErrorInfo(
        reason=name, domain=DOMAIN, metadata={**(metadata or {}), **extra}
    )
    details = [_packed(info)]
    if retry_after is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(max(0, round(retry_after * 1e9)))
        details.append(_packed(error_details_pb2.RetryInfo(retry_delay=delay)))
    return status_pb2.Status(code=getattr(code_pb2, code.name), message=message, details=details)


def _packed(detail: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


def status_for(error: ServiceError) -> grpc.Status:
    """The rich status answering ``error``."""
    return rpc_status.to_status(status_message_for(error))


def status_message_for(error: ServiceError) -> status_pb2.Status:
    """:func:`status_for` as the ``google.rpc.Status`` message (what a reply carries when a
    refusal does not end its call: a Play stream's outcome)."""
    return rich_status_message(error.code, error.reason, error.message,
                               metadata=error.metadata, retry_after=error.retry_after)


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
    """The code (lower snake case, e.g. ``"not_your_turn"``) a failed call's ``ErrorInfo``
    names (client side), if any: its wire reason read back (:func:`code_of_wire`)."""
    info = error_info_of(error)
    return None if info is None else code_of_wire(info.reason, info.metadata)


def error_reason_of(error: grpc.RpcError) -> int:
    """The ``dast.v1.ErrorReason`` value a failed call carries (client side);
    ``ERROR_REASON_UNSPECIFIED`` when it carries none or one this code does not know."""
    info = error_info_of(error)
    if info is None or info.reason not in _WIRE_NAMES:
        return errors_pb2.ERROR_REASON_UNSPECIFIED
    return errors_pb2.ErrorReason.Value(info.reason)


def retry_after_of(error: grpc.RpcError) -> float | None:
    """The ``RetryInfo`` delay (seconds) a failed call carries (client side), if any."""
    status = rpc_status.from_call(error)
    return None if status is None else retry_after_in(status)


def retry_after_in(status: status_pb2.Status) -> float | None:
    """The ``RetryInfo`` delay (seconds) of a status carried in a message (a Play stream's
    ``PlayOutcome.status``), if any."""
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return float(retry.retry_delay.ToNanoseconds()) / 1e9
    return None
