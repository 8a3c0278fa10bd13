"""Hostile gRPC calls built from the proto descriptors, and the rule every reply must keep.

Used by the hostile-RPC property test (one process, every method) and by the reliability
suite (the same calls while the whole system is loaded and broken). Messages come from the
descriptors, so a new RPC or field is covered without touching this module: strings with
NUL, control, format and direction-override characters, strings past any limit, raw and
invalid-UTF-8 bytes, unknown enum values, empty oneofs, and raw garbage instead of a
message, with valid, expired, forged and missing tokens. A bidirectional method is sent a
sequence of such messages (:func:`framed`), so its every message after the first is fuzzed
too.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import grpc
from google.protobuf.descriptor import (
    Descriptor,
    FieldDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import strategies as st

import dast.v1
from dast.v1 import errors_pb2

ROOT: Final = str(Path(__file__).resolve().parents[2])
DOCUMENTED: Final = frozenset({
    grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
})
"""The statuses the API documents for a caller's mistake (docs/clients.md)."""
LEAKS: Final = ("Traceback", 'File "', "sqlalchemy", "psycopg", "SELECT ", "INSERT INTO",
                " WHERE ", "site-packages", ROOT, "Exception", "Error:")
"""What no reply may carry: the server's internals (stack traces, SQL, library names, paths)."""
VALID_TOKENS: Final = ("seated", "account", "stranger", "service", "admin")
"""Token names that pass authentication (drawn more often, so calls reach the services)."""
STREAM_WAIT_SECONDS: Final = 0.2
"""How long a stream that answered normally is followed before the client cancels it."""
HOSTILE_TEXT: Final = (
    "x\x00", "\x00", "a\nb", "\x1b[2J", "\u202egnp.exe", "zero\u200bwidth", "\ufeff", "\r\n",
    "../../etc/passwd", "' OR 1=1 --", "%s%n", "\U0010ffff", "g" * 65, "x" * 300,
)

_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_INTS: Final = {
    FieldDescriptor.TYPE_INT32: _INT32, FieldDescriptor.TYPE_SINT32: _INT32,
    FieldDescriptor.TYPE_INT64: _INT64, FieldDescriptor.TYPE_SINT64: _INT64,
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1), FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def every_service() -> tuple[ServiceDescriptor, ...]:
    """Every service declared in the protos of ``dast.v1``, in file order."""
    found: list[ServiceDescriptor] = []
    for module_info in sorted(pkgutil.iter_modules(dast.v1.__path__), key=lambda m: m.name):
        if module_info.name.endswith("_pb2"):
            module = importlib.import_module(f"dast.v1.{module_info.name}")
            found += module.DESCRIPTOR.services_by_name.values()
    return tuple(found)


def rpc_path(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def _texts(ids: Sequence[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(ids), st.sampled_from(HOSTILE_TEXT), st.text(max_size=12),
        st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Mn"]),
                max_size=8),
        st.builds(lambda known, hostile: known + hostile, st.sampled_from(ids),
                  st.sampled_from(HOSTILE_TEXT)),
    )


def _scalar(field: FieldDescriptor, ids: Sequence[str]) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _texts(ids)
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.binary(max_size=40), st.just(b"\xff\xfe\x00" * 500),
                         st.binary(min_size=32, max_size=32))
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_ENUM:
        known = [value.number for value in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-3, 40),
                         st.integers(-(2**31), 2**31 - 1))
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.one_of(st.integers(0, 110), st.integers(low, high))
    if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(allow_nan=True)
    raise AssertionError(f"no strategy for {field.full_name}")


def messages(descriptor: Descriptor, ids: Sequence[str], depth: int = 0
             ) -> st.SearchStrategy[Message]:
    """Random messages of ``descriptor``: any subset of its fields (so empty oneofs too)."""
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field_ in descriptor.fields:
        if field_.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 3 or field_.message_type.GetOptions().map_entry:
                continue
            # The depth bound ends recursive schemas (a message holding its own type).
            single: st.SearchStrategy[Any] = messages(field_.message_type, ids, depth + 1)
        else:
            single = _scalar(field_, ids)
        optional[field_.name] = st.lists(single, max_size=3) if field_.is_repeated else single
    cls = GetMessageClass(descriptor)

    def build(values: dict[str, Any]) -> Message:
        message = cls()
        for name, value in values.items():
            field_ = descriptor.fields_by_name[name]
            if field_.type == FieldDescriptor.TYPE_MESSAGE:
                if field_.is_repeated:
                    for item in value:
                        getattr(message, name).add().CopyFrom(item)
                else:
                    getattr(message, name).CopyFrom(value)
            elif field_.is_repeated:
                getattr(message, name).extend(value)
            else:
                setattr(message, name, value)
        return message

    return st.fixed_dictionaries({}, optional=optional).map(build)


_LENGTH: Final = 4
"""Bytes of the big-endian length before each message of a :func:`framed` payload."""


def framed(requests: Sequence[bytes]) -> bytes:
    """A bidirectional call's requests as one payload (what :func:`calls` draws and
    :func:`send` sends, as for every other method): each message after its length."""
    return b"".join(len(raw).to_bytes(_LENGTH, "big") + raw for raw in requests)


def unframed(payload: bytes) -> list[bytes]:
    """The requests of a :func:`framed` payload; bytes that are no such framing (raw garbage,
    a fixed worst case) are one request."""
    requests, at = [], 0
    while at + _LENGTH <= len(payload):
        size = int.from_bytes(payload[at:at + _LENGTH], "big")
        if at + _LENGTH + size > len(payload):
            break
        requests.append(payload[at + _LENGTH:at + _LENGTH + size])
        at += _LENGTH + size
    return requests if requests and at == len(payload) else [payload]


def _request(draw: st.DrawFn, method: MethodDescriptor, ids: Sequence[str]) -> bytes:
    """One request message of ``method``: a random message, or raw garbage."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(st.binary(max_size=64), st.just(b"\xff" * 9)))
    return draw(messages(method.input_type, ids)).SerializeToString()


@st.composite
def calls(
    draw: st.DrawFn, methods: Sequence[MethodDescriptor], ids: Sequence[str],
    token_names: Sequence[str],
) -> tuple[MethodDescriptor, bytes, str]:
    """A method, the bytes of its request (a random message, or raw garbage; a bidirectional
    method's, a :func:`framed` sequence of them), a token."""
    method = draw(st.sampled_from(methods))
    if method.client_streaming:
        payload = framed([_request(draw, method, ids)
                          for _ in range(draw(st.integers(1, 5)))])
    else:
        payload = _request(draw, method, ids)
    valid = [name for name in token_names if name in VALID_TOKENS]
    token = draw(st.one_of(st.sampled_from(valid), st.sampled_from(valid),
                           st.sampled_from(token_names)))
    return method, payload, token


def garbage_payloads(method: MethodDescriptor) -> list[bytes]:
    """The fixed worst cases for ``method``: NUL in every string field, invalid UTF-8 where
    a string belongs, and bytes that are no message at all."""
    nul = GetMessageClass(method.input_type)()
    for field_ in method.input_type.fields:
        if field_.type == FieldDescriptor.TYPE_STRING and not field_.is_repeated:
            setattr(nul, field_.name, "x\x00")
    return [nul.SerializeToString(), b"\x0a\x03\xff\xfe\x00", b"\xff" * 9, b"\x08"]


async def send(channel: grpc.aio.Channel, method: MethodDescriptor, payload: bytes,
               token: str | None, *, timeout: float = 10,
               ) -> tuple[grpc.StatusCode, list[bytes], grpc.aio.AioRpcError | None]:
    """Send raw ``payload`` to ``method``; its status and the raw replies it streamed."""
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    replies: list[bytes] = []
    try:
        if method.client_streaming:
            await _bidirectional(channel, method, unframed(payload), metadata, replies)
        elif method.server_streaming:
            call = channel.unary_stream(rpc_path(method))(payload, metadata=metadata)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STREAM_WAIT_SECONDS):
                    async for reply in call:
                        replies.append(reply)
            call.cancel()
        else:
            replies.append(await channel.unary_unary(rpc_path(method))(
                payload, metadata=metadata, timeout=timeout))
    except grpc.aio.AioRpcError as error:
        return error.code(), replies, error
    return grpc.StatusCode.OK, replies, None


OPENING_WAIT_SECONDS: Final = 0.2
"""How long a bidirectional call waits, before writing its first request, for a server that
ends it without one (a missing or refused token)."""
ANSWER_WAIT_SECONDS: Final = 0.5
"""How long it waits after each request for the server's answer to it (a reply, or the end
of the call) before it writes the next."""


async def _bidirectional(channel: grpc.aio.Channel, method: MethodDescriptor,
                         requests: list[bytes], metadata: Any, replies: list[bytes]) -> None:
    """Write ``requests`` to a call of ``method`` one by one while reading its replies into
    ``replies``, for :data:`STREAM_WAIT_SECONDS` after the last.

    The client writes nothing once the server may have ended the call: grpc.aio reports a
    write that meets a call the server has just ended as the client's own INTERNAL
    ("Internal error from Core") in place of the server's status. So it writes each request
    only when the server has answered the one before (or said nothing for a while).

    :raises grpc.aio.AioRpcError: the status the call ended with.
    """
    call = channel.stream_stream(rpc_path(method))(metadata=metadata)
    answered = asyncio.Event()

    async def read() -> None:
        async for reply in call:
            replies.append(reply)
            answered.set()

    async def settled(seconds: float) -> None:
        """Return once the call ended or answered, or after ``seconds``."""
        waiting = asyncio.ensure_future(answered.wait())
        await asyncio.wait({reading, waiting}, timeout=seconds,
                           return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()

    reading = asyncio.ensure_future(read())
    try:
        for index, raw in enumerate(requests):
            await settled(OPENING_WAIT_SECONDS if index == 0 else ANSWER_WAIT_SECONDS)
            if reading.done():
                break
            answered.clear()
            await call.write(raw)
        await settled(ANSWER_WAIT_SECONDS)
        if not reading.done():
            await call.done_writing()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reading), STREAM_WAIT_SECONDS)
        if reading.done():
            reading.result()  # raises the status the call ended with
    finally:
        call.cancel()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await reading


def reply_problem(code: grpc.StatusCode, payload: bytes,
                  error: grpc.aio.AioRpcError | None) -> str | None:
    """What is wrong with a reply to a hostile call, or None when it keeps the rule: a
    documented status; no internals in the message or the details; an error that carries
    ``ErrorInfo`` in domain ``dast.dev`` naming an ``ErrorReason`` (only gRPC's own refusal
    of an oversized request comes without it)."""
    if code not in DOCUMENTED:
        return f"undocumented status {code.name}: {error.details() if error else ''}"
    if error is None:
        return None
    message = error.details() or ""
    status = rpc_status.from_call(error)
    details_text = "" if status is None else str(status)
    for leak in LEAKS:
        if leak in message or leak in details_text:
            return f"the reply leaks {leak!r}"
    if status is None:
        oversized = code == grpc.StatusCode.RESOURCE_EXHAUSTED and len(payload) > 60_000
        return None if oversized else f"{code.name} without status details"
    info = error_details_pb2.ErrorInfo()
    if not any(detail.Unpack(info) for detail in status.details):
        return f"{code.name} without ErrorInfo: {status}"
    reasons = errors_pb2.ErrorReason.DESCRIPTOR.values_by_name
    if info.domain != "dast.dev" or info.reason not in reasons:
        return f"ErrorInfo outside domain dast.dev or without an ErrorReason: {info}"
    return None


def game_ids_in(message: Message) -> set[str]:
    """Game ids a message names, nested messages included."""
    found: set[str] = set()
    for field_, value in message.ListFields():
        if field_.name == "game_id" and isinstance(value, str):
            found.add(value)
        elif field_.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if field_.is_repeated else (value,):
                found |= game_ids_in(item)
    return found
