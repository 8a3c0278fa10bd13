"""Events as canonical JSON, for storage and the wire.

:func:`encode_event` writes compact JSON with sorted keys (the same event always gives the
same bytes, so the bytes can be hashed or compared); :func:`decode_event` reads it back,
checking every field's type, so a stored or received event is either exactly an
:class:`~engine.tournament.model.Event` or refused. Fact types are tagged by class name
(``"type": "ResultRecorded"``), bytes are lowercase hex, enums their values.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from typing import Any, Final

from engine.core.errors import Code, InvalidCommand
from engine.tournament import model
from engine.tournament.model import Event

_BODIES: Final[dict[str, type[Any]]] = {
    cls.__name__: cls for cls in typing.get_args(model.EventBody)
}
MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
"""The largest encoded event accepted (a round of 1,024 tables is well under it)."""


def _hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(model))


_HINTS: Final[dict[type[Any], dict[str, Any]]] = {}


def _to_plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return [_to_plain(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        plain = {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if type(value).__name__ in _BODIES:
            plain["type"] = type(value).__name__
        return plain
    return value


def encode_event(event: Event) -> bytes:
    """``event`` as canonical JSON bytes."""
    return json.dumps(_to_plain(event), sort_keys=True, separators=(",", ":")).encode()


def _bad(message: str) -> InvalidCommand:
    return InvalidCommand(Code.MALFORMED_COMMAND, f"malformed tournament event: {message}")


def _from_plain(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _bad(f"expected an int, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise _bad(f"expected a bool, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise _bad(f"expected a string, got {value!r}")
        return value
    if hint is bytes:
        if not isinstance(value, str):
            raise _bad("expected hex bytes")
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise _bad("expected hex bytes") from None
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            raise _bad(f"{value!r} is no {hint.__name__}") from None
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list):
            raise _bad("expected a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_plain(item, args[0]) for item in value)
        if len(args) != len(value):
            raise _bad("a list has the wrong length")
        return tuple(_from_plain(item, arg) for item, arg in zip(value, args, strict=True))
    if origin in (types.UnionType, typing.Union):
        if not isinstance(value, dict) or value.get("type") not in _BODIES:
            raise _bad("a fact without a known type")
        return _dataclass(_BODIES[value["type"]], value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, value)
    raise _bad(f"cannot read {hint!r}")


def _dataclass(cls: type[Any], value: Any) -> Any:
    if not isinstance(value, dict):
        raise _bad(f"expected an object for {cls.__name__}")
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    extra = set(value) - names - {"type"}
    if extra:
        raise _bad(f"unknown fields {sorted(extra)} in {cls.__name__}")
    missing = names - set(value)
    if missing:
        raise _bad(f"missing fields {sorted(missing)} in {cls.__name__}")
    return cls(**{name: _from_plain(value[name], hints[name]) for name in names})


def decode_event(data: bytes) -> Event:
    """The event ``data`` encodes.

    :raises InvalidCommand: (code ``malformed_command``) if ``data`` is not an encoded event.
    """
    if len(data) > MAX_EVENT_BYTES:
        raise _bad("too large")
    try:
        plain = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise _bad("not JSON") from None
    event = _dataclass(Event, plain)
    assert isinstance(event, Event)
    return event
