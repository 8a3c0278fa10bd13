"""Checks of what callers send, shared by every service: ids, display names, whole requests.

Two layers, so that a new RPC is covered before anyone writes a check for it:

- :func:`request_problem` runs on every parsed request in the server's interceptor chain
  (:mod:`services.platform.server`). It walks every field the request sets and refuses a
  NUL character in any string (no store can hold it: PostgreSQL rejects it, and a NUL
  reaching SQL once leaked the SQL error), an id that is not printable text (a field named
  ``*_id`` or ``invite_code``), a string or bytes field longer than any legitimate value,
  and an enum value the schema does not define. It never rewrites anything.
- The services then apply the meaning of a field: :func:`check_id` for ids with their own
  length rules (a device id has 8 to 128 characters), :func:`clean_display_name` for the one
  free-text field a player chooses.

Every refusal is a :class:`~services.platform.errors.ServiceError` with INVALID_ARGUMENT,
a stable reason (``invalid_request``, ``invalid_display_name``, ``unknown_enum_value``), a
message naming the field (never echoing the value) and the field's path in
``ErrorInfo.metadata["field"]``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from engine.registry import is_game_type
from services.platform.errors import Reason, ServiceError

MAX_ID_CHARS: Final = 128
"""Longest id any request may carry (game and command ids are shorter in practice)."""
MAX_TEXT_CHARS: Final = 256
"""Longest free-text string any request may carry (display names are cut shorter)."""
LONG_TEXT_FIELDS: Final = {"id_token": 16 * 1024, "access_token": 4 * 1024,
                           "page_token": 1024}
"""Free-text fields allowed longer than :data:`MAX_TEXT_CHARS`, by field name, and their
limit (an identity provider's ID token is one or two kilobytes, a dast access token a few
hundred bytes; a page token names the row it continues after, whose id may be 128
characters of up to 4 bytes each)."""
MAX_BYTES: Final = 1024
"""Longest bytes field any request may carry (seeds have 32 bytes)."""
DISPLAY_NAME_CHARS: Final = 32
"""Longest display name, counted after cleaning."""
MAX_COMBINING_MARKS: Final = 3
"""Combining marks kept on one letter: enough for Arabic harakat (a shadda and a vowel) and
Latin accents, not for marks stacked high above a line ("zalgo" text)."""

_SPACE: Final = re.compile(r"\s")
_ZWNJ: Final = "\u200c"
"""ZERO WIDTH NON-JOINER: a format character, yet part of Persian spelling (ن‌ها), so a
display name keeps it between two letters and loses it anywhere else."""
_DROPPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (zero-width, bidi embeddings, overrides and isolates, BOM), surrogate,
private-use and unassigned characters, and line/paragraph separators: nothing a name shows."""


_GAME_TYPE: Final = "dast.v1.GameType"
_ENUM_REASONS: Final = {_GAME_TYPE: Reason.UNKNOWN_GAME_TYPE}
"""Reasons of unknown enum values that the services answered before this check existed
(reasons never change once shipped); any other enum's is ``unknown_enum_value``."""


def _is_registered_game(field: FieldDescriptor, value: int) -> bool:
    """Whether ``value`` of a ``GameType`` field is a game registered at run time (its number
    is outside the enum: log.proto "Games outside the schema")."""
    return bool(field.enum_type.full_name == _GAME_TYPE and is_game_type(value))


def _invalid(reason: Reason, field: str, problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, f"{field} {problem}",
                        metadata={"field": field})


def is_id_field(field: FieldDescriptor) -> bool:
    """Whether a string field holds an id (by the schema's naming: ``*_id``, ``invite_code``)."""
    name: str = field.name
    return name.endswith("_id") or name == "invite_code"


def id_problem(value: str, *, max_chars: int = MAX_ID_CHARS) -> str | None:
    """Why ``value`` is no acceptable id (None when it is): ids are printable text without
    spaces, at most ``max_chars`` characters.

    >>> id_problem("game-1") is None
    True
    >>> id_problem("x\\x00")
    'has a control, format or space character'
    """
    if len(value) > max_chars:
        return f"has more than {max_chars} characters"
    if not value.isprintable() or _SPACE.search(value) is not None:
        return "has a control, format or space character"
    return None


QUOTED_INPUT_CHARS: Final = 24
"""Most characters of a caller's input an error message quotes back."""


def quoted_input(value: str, *, max_chars: int = QUOTED_INPUT_CHARS) -> str:
    """A caller's ``value`` as an error message may quote it: a short prefix, escaped, so a
    message never carries a path, a 70 kB string or a control character back to a log or a
    screen.

    >>> quoted_input("t-1")
    "'t-1'"
    >>> quoted_input("a\\nb")
    "'a\\\\nb'"
    >>> quoted_input("x" * 30)
    "'xxxxxxxxxxxxxxxxxxxxxxxx…' (30 characters)"
    """
    escaped = "".join(_escaped_char(char) for char in value[:max_chars])
    if len(value) <= max_chars:
        return f"'{escaped}'"
    return f"'{escaped}…' ({len(value)} characters)"


def _escaped_char(char: str) -> str:
    if char in "'\\":
        return "\\" + char
    return char if char.isprintable() else ascii(char)[1:-1]


def check_id(
    value: str, field: str, *, min_chars: int = 1, max_chars: int = MAX_ID_CHARS
) -> str:
    """``value`` if it is an acceptable id of ``min_chars`` to ``max_chars`` characters.

    :raises ServiceError: INVALID_ARGUMENT, reason ``invalid_request``.
    """
    problem = id_problem(value, max_chars=max_chars)
    if problem is None and len(value) < min_chars:
        problem = f"has fewer than {min_chars} characters"
    if problem is not None:
        raise _invalid(Reason.INVALID_REQUEST, field, problem)
    return value


def clean_display_name(raw: str, *, max_chars: int = DISPLAY_NAME_CHARS,
                       field: str = "display_name") -> str:
    """The display name ``raw`` as others will see it ("" when none was given); the same
    rules serve other names players choose and others see (``field`` names the request's
    field in a refusal: a tournament's ``settings.name``).

    NFKC-normalised (full-width and presentation forms become the plain letters), control
    and invisible characters removed (zero-width, direction overrides and isolates, BOM,
    escapes), any run of spaces, tabs or line breaks made one space, at most
    :data:`MAX_COMBINING_MARKS` marks per letter, trimmed.

    >>> clean_display_name("  Nima\\u202e\\u200b\\n  Rezaei\\x1b[31m ")
    'Nima Rezaei[31m'
    >>> clean_display_name("ｎｉｍａ")
    'nima'

    :raises ServiceError: INVALID_ARGUMENT, reason ``invalid_display_name``, when a name
        was given but nothing visible is left, or more than ``max_chars`` characters are.
    """
    if not raw:
        return ""
    if len(raw) > MAX_TEXT_CHARS:
        raise _invalid(Reason.INVALID_DISPLAY_NAME, field,
                       f"has more than {MAX_TEXT_CHARS} characters")
    text = unicodedata.normalize("NFKC", raw)
    kept: list[str] = []
    marks = 0
    for index, char in enumerate(text):
        if char.isspace():
            char = " "
        category = unicodedata.category(char)
        if char == _ZWNJ:
            if _joins_letters(text, index) and kept and kept[-1] != _ZWNJ:
                kept.append(char)
            continue
        if category in _DROPPED_CATEGORIES:
            continue
        if category.startswith("M"):
            marks += 1
            if marks > MAX_COMBINING_MARKS or not kept or kept[-1] == " ":
                continue
        else:
            marks = 0
        if char == " " and (not kept or kept[-1] == " "):
            continue
        kept.append(char)
    name = "".join(kept).strip(" ")
    # Normalising again: dropping characters may have brought composable pairs together.
    name = unicodedata.normalize("NFKC", name)
    if not name:
        raise _invalid(Reason.INVALID_DISPLAY_NAME, field, "has no visible character")
    if len(name) > max_chars:
        raise _invalid(Reason.INVALID_DISPLAY_NAME, field,
                       f"has more than {max_chars} characters")
    return name


def _joins_letters(text: str, index: int) -> bool:
    """Whether the non-joiner at ``index`` (or the run of them it is part of) sits between
    two letters."""
    before, after = index - 1, index + 1
    while before >= 0 and text[before] == _ZWNJ:
        before -= 1
    while after < len(text) and text[after] == _ZWNJ:
        after += 1
    return before >= 0 and after < len(text) and text[before].isalpha() and (
        text[after].isalpha()
    )


def request_problem(request: Message) -> ServiceError | None:
    """The first field of ``request`` (nested messages included) no service may receive,
    as the INVALID_ARGUMENT to answer; None when every field is acceptable."""
    return _message_problem(request, "")


def _message_problem(message: Message, prefix: str) -> ServiceError | None:
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        values = value if field.is_repeated else (value,)
        for item in values:
            problem = _value_problem(field, item, path)
            if problem is not None:
                return problem
    return None


def _value_problem(field: FieldDescriptor, value: object, path: str) -> ServiceError | None:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.GetOptions().map_entry:
            return None  # no request has a map; their keys and values are left to handlers
        assert isinstance(value, Message)
        return _message_problem(value, f"{path}.")
    if kind == FieldDescriptor.TYPE_STRING:
        assert isinstance(value, str)
        if is_id_field(field):
            problem = id_problem(value)
            return None if problem is None else _invalid(Reason.INVALID_REQUEST, path, problem)
        if "\x00" in value:
            return _invalid(Reason.INVALID_REQUEST, path, "contains a NUL character")
        limit = LONG_TEXT_FIELDS.get(field.name, MAX_TEXT_CHARS)
        if len(value) > limit:
            return _invalid(Reason.INVALID_REQUEST, path, f"has more than {limit} characters")
        return None
    if kind == FieldDescriptor.TYPE_BYTES:
        assert isinstance(value, bytes)
        if len(value) > MAX_BYTES:
            return _invalid(Reason.INVALID_REQUEST, path, f"has more than {MAX_BYTES} bytes")
        return None
    if kind == FieldDescriptor.TYPE_ENUM and field.enum_type.values_by_number.get(
        int(value)  # type: ignore[call-overload]
    ) is None and not _is_registered_game(field, int(value)):  # type: ignore[call-overload]
        reason = _ENUM_REASONS.get(field.enum_type.full_name, Reason.UNKNOWN_ENUM_VALUE)
        return _invalid(reason, path, f"has no value {value}")
    return None
