"""What a profile's avatar id and locale may hold (services/accounts/profiles.py): the forms
docs/accounts.md gives, and hostile text refused with a stable reason and a short, escaped
quote of it."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.accounts.profiles import canonical_locale, check_avatar_id
from services.platform.errors import ServiceError
from tests.services.accounts.calls import AVATAR_FORM, LOCALE_FORM


def _assert_refused(check: Callable[[str], str], raw: str, reason: str, field: str) -> None:
    """``check`` refuses ``raw`` with ``reason``, naming ``field``, quoting ``raw`` short and
    escaped."""
    with pytest.raises(ServiceError) as refused:
        check(raw)
    assert (refused.value.code, refused.value.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert refused.value.metadata == {"field": field}
    assert refused.value.message.startswith(f"{field} '")
    assert refused.value.message.isprintable() and len(refused.value.message) < 200


@pytest.mark.parametrize("avatar_id", ["", "cat", "cat-03", "pack2_fox", "7", "a" * 64])
def test_avatar_ids_of_the_documented_form_are_kept_as_they_are(avatar_id: str) -> None:
    assert check_avatar_id(avatar_id) == avatar_id


@pytest.mark.parametrize("avatar_id", [
    "Cat", "-cat", "_cat", "cat 03", "cat/03", "../cat", "cat.png", "a" * 65, "گربه",
    "\u0430vatar",  # a Cyrillic а that looks like a Latin a
    "cat\u202e", "cat\u200b", "cat\n", "x\x00", "ｃａｔ",
])
def test_other_avatar_ids_are_refused_with_a_short_escaped_quote(avatar_id: str) -> None:
    _assert_refused(check_avatar_id, avatar_id, "invalid_avatar_id", "avatar_id")


@pytest.mark.parametrize(("given_tag", "kept"), [
    ("", ""), ("fa", "fa"), ("fa-IR", "fa-IR"), ("ar", "ar"), ("ar-SA", "ar-SA"),
    ("en", "en"), ("FA-ir", "fa-IR"), ("az-latn-az", "az-Latn-AZ"), ("zh-Hant", "zh-Hant"),
    ("es-419", "es-419"), ("ckb-IQ", "ckb-IQ"), ("sr-CYRL", "sr-Cyrl"),
])
def test_locales_of_the_documented_form_are_kept_in_canonical_case(
        given_tag: str, kept: str) -> None:
    assert canonical_locale(given_tag) == kept


@pytest.mark.parametrize("locale", [
    "fa_IR", "english", "f", "fa-", "-IR", "fa-IR-", "fa-IRN", "fa-12", "fa-x-private",
    "ca-ES-valencia", "en-US-u-ca-persian", "fa IR", "fa-IR\n", "fa\u202e", "\u0641\u0627",
    "ｆａ", "fa-ir-latn", "x" * 300, "fa\x00",
])
def test_other_locales_are_refused_with_a_short_escaped_quote(locale: str) -> None:
    _assert_refused(canonical_locale, locale, "invalid_locale", "locale")


@given(st.text(max_size=80))
def test_any_text_is_either_refused_or_kept_in_the_documented_form(text: str) -> None:
    for check, form in ((check_avatar_id, AVATAR_FORM), (canonical_locale, LOCALE_FORM)):
        try:
            kept = check(text)
        except ServiceError as refused:
            assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
            assert "\x00" not in refused.message and "\u202e" not in refused.message
            continue
        assert kept == "" or form.fullmatch(kept), (text, kept)
        assert check(kept) == kept  # checking what was kept changes nothing


@given(st.from_regex(r"[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?",
                     fullmatch=True))
def test_every_tag_of_the_form_is_accepted_whatever_its_case(tag: str) -> None:
    kept = canonical_locale(tag)
    assert LOCALE_FORM.fullmatch(kept) and kept.lower() == tag.lower()
