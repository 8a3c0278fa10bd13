"""Page tokens (services/tournament/paging.py): a token made for a listing reads back as its
position, with those filters only; anything else, edited by one character or invented,
is refused with INVALID_ARGUMENT on field ``page_token``, never read as a position."""

from __future__ import annotations

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.platform.errors import ServiceError
from services.tournament.paging import PageTokens
from services.tournament.store import ListingQuery, Position

TOKENS = PageTokens("page-token-test-secret-0123456789abcdef")
QUERIES = st.builds(ListingQuery, status=st.integers(0, 4), game_type=st.integers(0, 3),
                    by_operator=st.booleans())
POSITIONS = st.builds(Position, promoted=st.booleans(),
                      created_at_ms=st.integers(0, 2**53),
                      tournament_id=st.text(min_size=1, max_size=128))


def _refused(token: str, query: ListingQuery) -> None:
    with pytest.raises(ServiceError) as caught:
        TOKENS.read(token, query)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.metadata == {"field": "page_token"}


@given(QUERIES, POSITIONS)
def test_a_token_reads_back_as_its_position_with_its_own_filters(
        query: ListingQuery, position: Position) -> None:
    token = TOKENS.make(query, position)
    assert TOKENS.read(token, query) == position
    other = ListingQuery(query.status + 1, query.game_type, query.by_operator)
    _refused(token, other)


@given(QUERIES, POSITIONS, st.data())
def test_a_token_changed_in_one_character_is_refused(
        query: ListingQuery, position: Position, data: st.DataObject) -> None:
    token = TOKENS.make(query, position)
    index = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.sampled_from("ABCDEFabcdef0123456789-_.").filter(
        lambda char: char != token[index]))
    changed = token[:index] + replacement + token[index + 1:]
    try:
        read = TOKENS.read(changed, query)
    except ServiceError as refusal:
        assert refusal.code == grpc.StatusCode.INVALID_ARGUMENT
    else:
        # base64 without padding: a change in the last character's unused bits decodes to
        # the same bytes, hence the same position; never another one.
        assert read == position


@given(QUERIES, st.text(min_size=1, max_size=700))
def test_an_invented_token_is_refused(query: ListingQuery, token: str) -> None:
    _refused(token, query)


def test_a_token_of_another_secret_is_refused() -> None:
    query, position = ListingQuery(), Position(False, 1, "t1")
    _refused(PageTokens("another-secret-0123456789abcdef0123456789").make(query, position),
             query)
    assert TOKENS.read("", query) is None
