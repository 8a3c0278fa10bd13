"""The exported log format: JSON Lines, one :class:`~dast.v1.log_pb2.LogEntry` a line.

Each line is the protobuf JSON mapping of a ``LogEntry`` (bytes as base64, field names in
lowerCamelCase), so any language with a protobuf runtime can read it. This module only
converts text; reading and writing files is the caller's business.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import json_format

from dast.v1 import log_pb2


class LogFormatError(ValueError):
    """Raised when a line of a log is not a LogEntry in protobuf JSON."""


def dump_jsonl(entries: Iterable[log_pb2.LogEntry]) -> str:
    """Format entries as JSON Lines (one compact JSON object a line, newline-terminated)."""
    return "".join(
        json_format.MessageToJson(entry, indent=None, sort_keys=True) + "\n" for entry in entries
    )


def load_jsonl(text: str) -> list[log_pb2.LogEntry]:
    """Parse JSON Lines back into entries; blank lines are skipped.

    :raises LogFormatError: naming the first line that is not a LogEntry.
    """
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(json_format.Parse(line, log_pb2.LogEntry()))
        except json_format.ParseError as error:
            raise LogFormatError(f"line {number} is not a log entry: {error}") from error
    return entries
