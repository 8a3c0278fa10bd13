"""A seat's receipts, kept by ``dast play --receipts FILE`` for ``dast verify --receipts``.

Every event the server sends a seat (its Subscribe stream, its SubmitCommand replies) comes
with the chain hash after that event; kept outside the server, these hashes are what lets a
player catch a log rewritten after the match (docs/security.md). The file is JSON Lines,
``{"seq": N, "hash": "<base64>"}`` a line, the format :func:`engine.core.logformat.load_receipts`
reads.

Each line is flushed as it is written, so a client killed mid-match keeps every receipt it
had been sent. A receipt already in the file (a stream that reconnects replays from where it
was; a restarted client replays the whole match) is not written again; one with the same seq
but another hash is, because two hashes for one seq are exactly the evidence worth keeping.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TextIO

from dast.v1 import log_pb2
from engine.core.logformat import LogFormatError, load_receipts


class ReceiptsError(Exception):
    """The receipts file cannot be kept: unreadable, not receipts, or not writable."""


GAME_PLACEHOLDER = "{game}"
"""Replaced by the game id in a ``--receipts`` path, so that every match gets its own file."""


def receipts_path(template: str, game_id: str, *, first_match: bool) -> Path:
    """Where to keep the receipts of ``game_id``.

    A verifier compares a receipts file with one game's log, so two matches must not share
    a file: without :data:`GAME_PLACEHOLDER` in ``template``, the first match uses the path
    as given and every later one (a rematch) inserts its game id before the suffix.
    """
    if GAME_PLACEHOLDER in template:
        return Path(template.replace(GAME_PLACEHOLDER, game_id)).expanduser()
    path = Path(template).expanduser()
    return path if first_match else path.with_name(f"{path.stem}-{game_id}{path.suffix}")


class ReceiptsFile:
    """Appends one game's receipts to a file, each once; safe to call from several threads
    (the stream's thread and the prompt's).

    :raises ReceiptsError: when the file cannot be read or opened for appending, or exists
        and holds something other than receipts (appending would leave it unreadable to the
        verifier).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            existing = path.read_text(encoding="utf-8") if path.exists() else ""
            self._kept = {(receipt.seq, receipt.hash) for receipt in load_receipts(existing)}
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO = path.open("a", encoding="utf-8")
        except (OSError, UnicodeDecodeError, LogFormatError) as error:
            raise ReceiptsError(f"cannot keep receipts in {path}: {error}") from error
        self._lock = threading.Lock()

    def __enter__(self) -> ReceiptsFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    @property
    def count(self) -> int:
        """How many distinct receipts the file holds."""
        with self._lock:
            return len(self._kept)

    def record(self, seq: int, digest: bytes) -> bool:
        """Keep the hash the server sent after event ``seq``; True if it was new.

        An empty hash (a server from before receipts) is no receipt and is skipped.
        """
        if seq < 1 or not digest:
            return False
        with self._lock:
            if (seq, digest) in self._kept or self._file.closed:
                return False
            line = json.dumps({"seq": seq, "hash": base64.b64encode(digest).decode("ascii")})
            self._file.write(line + "\n")
            self._file.flush()
            self._kept.add((seq, digest))
            return True

    def record_reply(self, events: Sequence[log_pb2.Event], hashes: Sequence[bytes]) -> int:
        """Keep the receipts of a SubmitCommand reply (``hashes[i]`` follows ``events[i]``);
        how many were new."""
        return sum(self.record(event.seq, digest)
                   for event, digest in zip(events, hashes, strict=False))

    def close(self) -> None:
        """Close the file; later receipts are dropped (the stream may still deliver one)."""
        with self._lock:
            self._file.close()
