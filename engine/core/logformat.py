"""The exported log format and a seat's saved receipts, both JSON Lines.

An exported log is one :class:`~dast.v1.log_pb2.LogEntry` a line, in the protobuf JSON
mapping (bytes as base64, field names in lowerCamelCase), so any language with a protobuf
runtime reads it. A sealed export ends with one more line, ``{"seal": <LogSeal>}``: the
server's signature over the head (:mod:`engine.core.seal`). Files written before seals
existed are the same without that line.

A seat's receipts file holds the chain hashes the seat was sent, one JSON object a line,
in either form:

- ``{"seq": 12, "hash": "<base64>"}``;
- a ``SubscribeResponse`` as protobuf JSON, saved as received (``{"event": {…, "seq":
  "12"}, "hash": "<base64>"}``).

Bytes are read strictly: the protobuf JSON mapping accepts standard and URL-safe base64,
with or without padding, and this module refuses any other character in a bytes field,
where protobuf's own parser would skip it (so two different files would read as one log).

This module only converts text; reading and writing files is the caller's business.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from dast.v1 import log_pb2

_SEAL_KEY = "seal"
_BASE64_TEXT: Final = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
"""What a bytes field may hold in protobuf JSON: either base64 alphabet, padded or not."""


class LogFormatError(ValueError):
    """Raised when a line is not what the format allows there."""


@dataclass(frozen=True, slots=True)
class ExportedLog:
    """The contents of an exported log file."""

    entries: list[log_pb2.LogEntry]
    seal: log_pb2.LogSeal | None
    """None for an unsealed export (an unfinished game, or a file from before seals)."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """One chain hash a seat was sent: the hash after event ``seq``."""

    seq: int
    hash: bytes


def dump_jsonl(
    entries: Iterable[log_pb2.LogEntry], seal: log_pb2.LogSeal | None = None
) -> str:
    """Format entries (and the seal, as the last line) as JSON Lines."""
    lines = [json_format.MessageToJson(entry, indent=None, sort_keys=True) for entry in entries]
    if seal is not None:
        body = json_format.MessageToDict(seal)
        lines.append(json.dumps({_SEAL_KEY: body}, sort_keys=True, separators=(", ", ": ")))
    return "".join(line + "\n" for line in lines)


def load_log(text: str) -> ExportedLog:
    """Parse an exported log; blank lines are skipped.

    :raises LogFormatError: naming the first line that is neither a LogEntry nor, as the
        last line, a seal.
    """
    entries: list[log_pb2.LogEntry] = []
    seal: log_pb2.LogSeal | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if seal is not None:
            raise LogFormatError(f"line {number} follows the seal, which must be the last line")
        try:
            value = json.loads(line)
            if isinstance(value, dict) and set(value) == {_SEAL_KEY}:
                _check_bytes(log_pb2.LogSeal.DESCRIPTOR, value[_SEAL_KEY], _SEAL_KEY)
                seal = json_format.ParseDict(value[_SEAL_KEY], log_pb2.LogSeal())
            else:
                _check_bytes(log_pb2.LogEntry.DESCRIPTOR, value, "")
                entries.append(json_format.Parse(line, log_pb2.LogEntry()))
        except (ValueError, json_format.ParseError) as error:
            raise LogFormatError(f"line {number} is not a log entry: {error}") from error
    return ExportedLog(entries, seal)


@functools.cache
def _fields_by_key(message: Descriptor) -> dict[str, FieldDescriptor]:
    """``message``'s fields by every name JSON may give them (proto and lowerCamelCase)."""
    return {**message.fields_by_name, **{field.json_name: field for field in message.fields}}


def _check_bytes(message: Descriptor, value: object, path: str) -> None:
    """Refuse a bytes field of ``value`` (the JSON of a ``message``) that holds a character
    outside base64's alphabets, naming its path; the rest is left to protobuf's parser.

    :raises ValueError: naming the field.
    """
    if not isinstance(value, dict):
        return
    if message.full_name == "google.protobuf.Any":
        type_url = value.get("@type")
        if not isinstance(type_url, str):
            return
        try:
            message = log_pb2.DESCRIPTOR.pool.FindMessageTypeByName(type_url.rsplit("/", 1)[-1])
        except KeyError:
            return  # protobuf's parser refuses an unknown type itself
    fields = _fields_by_key(message)
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            continue
        where = f"{path}.{key}" if path else key
        items = item if field.is_repeated and isinstance(item, list) else [item]
        if field.type == FieldDescriptor.TYPE_BYTES:
            for text in items:
                if isinstance(text, str) and _BASE64_TEXT.fullmatch(text) is None:
                    raise ValueError(f"{where} is not base64")
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            entry = field.message_type
            if entry.GetOptions().map_entry and isinstance(item, dict):
                items = list(item.values())
                entry = entry.fields_by_name["value"].message_type
                if entry is None:
                    continue
            for element in items:
                _check_bytes(entry, element, where)


def load_jsonl(text: str) -> list[log_pb2.LogEntry]:
    """The entries of an exported log (a seal line, if any, is checked and left out).

    :raises LogFormatError: as :func:`load_log`.
    """
    return load_log(text).entries


def load_receipts(text: str) -> list[Receipt]:
    """Parse a seat's receipts file (see the module docstring); blank lines are skipped.

    :raises LogFormatError: naming the first line that is no receipt.
    """
    receipts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
            # A saved SubscribeResponse names its seq inside the event.
            seq = int(value["event"].get("seq", 0)) if "event" in value else int(value["seq"])
            digest = base64.b64decode(value["hash"], validate=True)
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as error:
            raise LogFormatError(f"line {number} is not a receipt: {error!r}") from error
        if seq < 1 or len(digest) != 32:
            raise LogFormatError(f"line {number} is not a receipt: seq {seq}, "
                                 f"{len(digest)}-byte hash")
        receipts.append(Receipt(seq, digest))
    return receipts
