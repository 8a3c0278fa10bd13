"""What a player may put in their profile besides the display name (which
:func:`services.platform.validation.clean_display_name` rules, as everywhere): an avatar id and
a locale.

- An **avatar id** names one of the app's own pictures (``cat-03``, ``pack2_fox``): 1 to
  :data:`AVATAR_ID_CHARS` characters of ``a-z``, ``0-9``, ``-`` and ``_``, starting with a
  letter or a digit. The server keeps no pictures and no list of them (each app has its own);
  the character set is narrow so that an app may use the id in a file name or a URL path
  as it is, and so that no id can hide a path (``/``, ``..``), a space or another script's
  look-alike letters.
- A **locale** is a BCP 47 tag of the form ``language[-Script][-REGION]``: a language of 2
  or 3 letters (ISO 639), a script of 4 letters (ISO 15924), a region of 2 letters (ISO
  3166) or 3 digits (UN M.49): ``fa``, ``fa-IR``, ``ar-SA``, ``az-Latn-AZ``, ``es-419``.
  Tags are matched without regard to case and kept in the canonical case (``FA-ir`` becomes
  ``fa-IR``). Variants, extensions and private-use parts (``ca-ES-valencia``, ``en-x-foo``)
  and ``_`` separators (``fa_IR``, a POSIX locale name) are refused: the apps send what a
  platform's locale API gives for a language the person chose, and the tag is checked by
  its form, not against a registry of languages (a well-formed tag of a language nobody
  speaks is accepted).

Both may be empty: no avatar chosen, no locale chosen.
"""

from __future__ import annotations

import re
from typing import Final

import grpc

from services.accounts.reasons import AccountsReason
from services.accounts.store import AVATAR_ID_CHARS
from services.platform.errors import ServiceError
from services.platform.validation import quoted_input

LOCALE_TAG_CHARS: Final = 12
"""Longest tag of the form: a 3-letter language, a script and a 3-digit region."""
_AVATAR_ID: Final = re.compile(r"[a-z0-9][a-z0-9_-]*")
_LOCALE: Final = re.compile(
    r"(?P<language>[A-Za-z]{2,3})(?:-(?P<script>[A-Za-z]{4}))?"
    r"(?:-(?P<region>[A-Za-z]{2}|[0-9]{3}))?"
)


def _refused(reason: AccountsReason, field: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, f"{field} {message}",
                        metadata={"field": field})


def check_avatar_id(raw: str) -> str:
    """``raw`` if it is an acceptable avatar id, or empty (no avatar).

    >>> check_avatar_id("cat-03")
    'cat-03'

    :raises ServiceError: INVALID_ARGUMENT, reason ``invalid_avatar_id``.
    """
    if raw == "" or (len(raw) <= AVATAR_ID_CHARS and _AVATAR_ID.fullmatch(raw)):
        return raw
    raise _refused(AccountsReason.INVALID_AVATAR_ID, "avatar_id",
                   f"{quoted_input(raw)} is not 1 to {AVATAR_ID_CHARS} characters of a-z, "
                   "0-9, '-' and '_' starting with a letter or digit")


def canonical_locale(raw: str) -> str:
    """``raw`` as a BCP 47 tag in canonical case, or empty (no locale).

    >>> canonical_locale("FA-ir")
    'fa-IR'
    >>> canonical_locale("az-latn-az")
    'az-Latn-AZ'

    :raises ServiceError: INVALID_ARGUMENT, reason ``invalid_locale``.
    """
    if raw == "":
        return ""
    matched = _LOCALE.fullmatch(raw) if len(raw) <= LOCALE_TAG_CHARS else None
    if matched is None:
        raise _refused(AccountsReason.INVALID_LOCALE, "locale",
                       f"{quoted_input(raw)} is not a BCP 47 tag of the form "
                       "language[-Script][-REGION] (fa, fa-IR, az-Latn-AZ, es-419)")
    parts = [matched["language"].lower()]
    if matched["script"]:
        parts.append(matched["script"].title())
    if matched["region"]:
        parts.append(matched["region"].upper())
    return "-".join(parts)
