"""Checks of what callers send (services/platform/validation.py): ids, display names and the
whole-request walk every call passes in the server's interceptor chain."""

from __future__ import annotations

import unicodedata

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dast.v1 import common_pb2, game_pb2, hokm_pb2, lobby_pb2
from services.platform.errors import Reason, ServiceError
from services.platform.validation import (
    DISPLAY_NAME_CHARS,
    MAX_BYTES,
    MAX_ID_CHARS,
    MAX_TEXT_CHARS,
    check_id,
    clean_display_name,
    id_problem,
    request_problem,
)


@pytest.mark.parametrize("good", ["game-1", "a", "0123456789abcdef", "g-ab_CD", "نیما", "x" * 128])
def test_printable_ids_without_spaces_pass(good: str) -> None:
    assert id_problem(good) is None
    assert check_id(good, "game_id") == good


@pytest.mark.parametrize("bad", [
    "x\x00", "x\n", "a b", "tab\there", "\x1b[31m", "bidi\u202eover", "zero\u200bwidth",
    "bom\ufeff", "nbsp\u00a0", "line\u2028sep", "x" * (MAX_ID_CHARS + 1), "\ud800",
])
def test_ids_with_control_format_or_space_characters_or_too_long_are_refused(bad: str) -> None:
    assert id_problem(bad) is not None
    with pytest.raises(ServiceError) as refused:
        check_id(bad, "table_id")
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.reason == Reason.INVALID_REQUEST
    assert refused.value.metadata == {"field": "table_id"}
    assert bad not in refused.value.message  # the hostile value is never echoed


def test_an_id_shorter_than_its_minimum_is_refused() -> None:
    with pytest.raises(ServiceError, match="fewer than 8"):
        check_id("short", "device_id", min_chars=8)


@pytest.mark.parametrize(("raw", "clean"), [
    ("Nima", "Nima"),
    ("  Nima   Rezaei  ", "Nima Rezaei"),
    ("Nima\nRezaei\t\r", "Nima Rezaei"),                # line breaks and tabs are spaces
    ("\u202eevil\u202c", "evil"),                       # a direction override
    ("\u2066a\u2069b\u200f", "ab"),                     # isolates and a direction mark
    ("ze\u200bro\u200dwidth\ufeff", "zerowidth"),       # zero-width space and joiner, BOM
    ("esc\x1b[31mred\x07", "esc[31mred"),               # escape and bell
    ("nul\x00led", "nulled"),
    ("ｆｕｌｌ", "full"),                                # NFKC: full-width letters
    ("ﻧﯿﻤﺎ", "نیما"),                                   # NFKC: Arabic presentation forms
    ("e\u0301", "\u00e9"),                              # composed
    ("می\u200cخواهم", "می\u200cخواهم"),                # Persian ZWNJ between letters stays
    ("\u200cنیما\u200c", "نیما"),                       # ... and goes anywhere else
    ("a\u200c\u200cb", "a\u200cb"),
    ("Z" + "\u0301" * 30, "\u0179\u0301\u0301\u0301"),  # stacked marks are cut to 3
    ("", ""),                                           # no name: the lobby picks one
])
def test_display_names_are_normalised_and_stripped(raw: str, clean: str) -> None:
    assert clean_display_name(raw) == unicodedata.normalize("NFKC", clean)


@pytest.mark.parametrize("raw", [" ", "\u202e\u200b", "\x00\x1b", "\n\t ", "\u0301\u0301"])
def test_a_display_name_with_nothing_visible_is_refused(raw: str) -> None:
    with pytest.raises(ServiceError) as refused:
        clean_display_name(raw)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.reason == Reason.INVALID_DISPLAY_NAME


@pytest.mark.parametrize("raw", ["n" * (DISPLAY_NAME_CHARS + 1), "x" * (MAX_TEXT_CHARS + 1)])
def test_a_display_name_too_long_is_refused(raw: str) -> None:
    with pytest.raises(ServiceError, match="more than"):
        clean_display_name(raw)


@given(st.text(max_size=80))
def test_a_cleaned_display_name_shows_only_visible_text(raw: str) -> None:
    try:
        name = clean_display_name(raw)
    except ServiceError as refused:
        assert refused.reason == Reason.INVALID_DISPLAY_NAME
        return
    assert len(name) <= DISPLAY_NAME_CHARS
    assert name == name.strip() and "  " not in name
    assert unicodedata.is_normalized("NFKC", name)
    for char in name:
        category = unicodedata.category(char)
        assert char == "\u200c" or category not in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
        assert char == " " or not char.isspace()
    assert clean_display_name(name) == name  # cleaning is idempotent


def test_a_clean_request_passes_the_walk() -> None:
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), game_id="g-1",
        players=[common_pb2.Player(player_id="p0", display_name="Nima\n",
                                   client_seed=b"\xff\x00" * 16)],
    )
    assert request_problem(request) is None


@pytest.mark.parametrize(("request_", "field"), [
    (game_pb2.GetViewRequest(game_id="x\x00"), "game_id"),
    (game_pb2.SubmitCommandRequest(game_id="g", command_id="c\n"), "command_id"),
    (lobby_pb2.JoinTableRequest(table_id="t", invite_code="ab cd"), "invite_code"),
    (game_pb2.CreateGameRequest(players=[common_pb2.Player(player_id="ok"),
                                         common_pb2.Player(player_id="p\u202e")]),
     "players.player_id"),
    (game_pb2.CreateGameRequest(players=[common_pb2.Player(display_name="a\x00b")]),
     "players.display_name"),
    (lobby_pb2.SignInGuestRequest(device_id="d" * 8, display_name="n" * (MAX_TEXT_CHARS + 1)),
     "display_name"),
    (game_pb2.CreateGameRequest(server_seed=b"s" * (MAX_BYTES + 1)), "server_seed"),
])
def test_the_walk_names_the_first_bad_field(request_: game_pb2.GetViewRequest,
                                            field: str) -> None:
    problem = request_problem(request_)
    assert problem is not None
    assert problem.code == grpc.StatusCode.INVALID_ARGUMENT
    assert problem.reason == Reason.INVALID_REQUEST
    assert problem.metadata == {"field": field}


def test_unknown_enum_values_are_refused_anywhere_in_the_request() -> None:
    nested = lobby_pb2.CreateTableRequest(settings=lobby_pb2.TableSettings(bot_level=77))  # type: ignore[arg-type]
    problem = request_problem(nested)
    assert problem is not None and problem.reason == Reason.UNKNOWN_ENUM_VALUE
    assert problem.metadata == {"field": "settings.bot_level"}
    # GameType kept the reason the game service answered before the walk existed.
    game_type = request_problem(game_pb2.CreateGameRequest(game_type=99))  # type: ignore[arg-type]
    assert game_type is not None and game_type.reason == Reason.UNKNOWN_GAME_TYPE
