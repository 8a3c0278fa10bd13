"""Page tokens of ``ListTournaments``: opaque to callers, signed, bound to their filters.

A token names where the next page starts (:class:`~services.tournament.store.Position`: the
listing key of the last tournament shown) and carries an HMAC-SHA256 tag over that position
and the filters it was made for, keyed by a key derived from a secret of the service (its
token key's private seed: :class:`~services.tournament.app.TournamentApp`). So an
edited or invented token, or one sent with other filters, is refused with
``INVALID_ARGUMENT`` (reason ``invalid_request``, field ``page_token``) instead of paging
from a place the service never pointed to; every replica holding the secret reads every
replica's tokens, and a token stays valid until the secret changes. The position is the key
itself, not an offset, so tournaments created between two pages never shift the next one.

The form: ``<base64url of the JSON [version, promoted, created_at_ms, tournament_id]>.<base64url
of the first 16 bytes of the tag>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Final

import grpc

from services.platform.errors import Reason, ServiceError
from services.platform.validation import MAX_ID_CHARS
from services.tournament.store import ListingQuery, Position

MAX_TOKEN_CHARS: Final = 1024
"""Longer than any token this service makes: a tournament id may be 128 characters of 4
bytes each in UTF-8 (ids are printable text, chosen by an operator), about 800 once encoded
with the rest (the request guard admits a ``page_token`` that long)."""
TAG_BYTES: Final = 16
_VERSION: Final = 1
_KEY_LABEL: Final = b"dast.v1.TournamentService page tokens"


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _refused(problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                        f"page_token {problem}", metadata={"field": "page_token"})


class PageTokens:
    """Makes and reads page tokens with a key derived from ``secret``."""

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(secret.encode(), _KEY_LABEL, hashlib.sha256).digest()

    def _tag(self, query: ListingQuery, body: bytes) -> bytes:
        filters = json.dumps([query.status, query.game_type, query.by_operator]).encode()
        return hmac.new(self._key, filters + b"\n" + body, hashlib.sha256).digest()[:TAG_BYTES]

    def make(self, query: ListingQuery, after: Position) -> str:
        """The token of the page of ``query`` that starts after ``after``."""
        body = json.dumps([_VERSION, after.promoted, after.created_at_ms, after.tournament_id],
                          separators=(",", ":")).encode()
        return f"{_encode(body)}.{_encode(self._tag(query, body))}"

    def read(self, token: str, query: ListingQuery) -> Position | None:
        """Where the page ``token`` asks for starts (None: no token, the first page).

        :raises ServiceError: INVALID_ARGUMENT for a token this service did not make for
            ``query`` (edited, invented, or made for other filters).
        """
        if not token:
            return None
        if len(token) > MAX_TOKEN_CHARS:
            raise _refused(f"has more than {MAX_TOKEN_CHARS} characters")
        encoded_body, dot, encoded_tag = token.partition(".")
        try:
            body, tag = _decode(encoded_body), _decode(encoded_tag)
        except (binascii.Error, ValueError):
            raise _refused("is not a page token") from None
        if not dot or not hmac.compare_digest(tag, self._tag(query, body)):
            raise _refused("is not a page token of this listing (made for other filters, "
                           "or altered)")
        try:
            version, promoted, created_at_ms, tournament_id = json.loads(body)
        except (ValueError, TypeError):
            raise _refused("is not a page token") from None
        if (version != _VERSION or not isinstance(promoted, bool)
                or not isinstance(created_at_ms, int) or isinstance(created_at_ms, bool)
                or not isinstance(tournament_id, str) or len(tournament_id) > MAX_ID_CHARS):
            raise _refused("is not a page token")  # signed by us, yet not of this form
        return Position(promoted, created_at_ms, tournament_id)
