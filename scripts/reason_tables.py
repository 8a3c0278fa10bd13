"""Write the error-reason tables of docs/clients.md from the code (``--check``: only compare).

Every reason the API can send is a member of one of the enums in :data:`SOURCES`, and
travels in ``google.rpc.ErrorInfo.reason`` as the name of its ``dast.v1.ErrorReason`` value
(protos/dast/v1/errors.proto; :func:`services.platform.errors.wire_name`). The tables
between the ``reasons:begin`` and ``reasons:end`` markers of the guide are generated from
them, so a reason added to the code without a word for client developers fails here (no
:data:`GUIDANCE` entry, or no ``ErrorReason`` value) and in ``tests/test_client_guide.py``
(the guide is out of date)::

    .venv/bin/python scripts/reason_tables.py           # rewrite the tables in the guide
    .venv/bin/python scripts/reason_tables.py --check   # exit 1 when the guide is stale
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from engine.core.control import ControlCode  # noqa: E402
from engine.core.errors import Code  # noqa: E402
from engine.hand.errors import HandCode  # noqa: E402
from engine.hokm.errors import HokmCode  # noqa: E402
from engine.tournament.errors import TournamentCode  # noqa: E402
from services.accounts.oidc import OidcReason  # noqa: E402
from services.accounts.reasons import AccountsReason, ModerationReason  # noqa: E402
from services.chat.reasons import ChatReason, ReportReason  # noqa: E402
from services.lobby.reasons import LobbyReason  # noqa: E402
from services.platform.errors import Reason, is_listed, wire_name  # noqa: E402
from services.stats.service import StatsReason  # noqa: E402
from services.tournament.reasons import TournamentServiceReason  # noqa: E402

GUIDE = ROOT / "docs" / "clients.md"
BEGIN = "<!-- reasons:begin (scripts/reason_tables.py writes this part) -->"
END = "<!-- reasons:end -->"

# The engines' codes travel as INVALID_ARGUMENT when the command is malformed whatever the
# state (InvalidCommand), and as FAILED_PRECONDITION otherwise (RuleViolation).
MALFORMED = {
    Code.WRONG_GAME, Code.MALFORMED_COMMAND, Code.INVALID_CARD, Code.INVALID_SEAT,
    Code.INVALID_PLAYERS,
    Code.INVALID_RULES, HokmCode.INVALID_SUIT, HokmCode.DUPLICATE_CARD, HokmCode.NO_SUCH_PILE,
    ControlCode.BOT_LEVEL_REQUIRED, TournamentCode.INVALID_OPTIONS, TournamentCode.INVALID_ID,
    TournamentCode.INVALID_SEED, TournamentCode.WRONG_TEAM_SIZE, TournamentCode.UNKNOWN_TABLE,
    TournamentCode.INVALID_RESULT,
}

RELOAD = "a bug in the app's rules: reload the view and offer only `legal` moves"


@dataclass(frozen=True)
class Guidance:
    """How a reason reaches the client and what the client does about it."""

    status: str
    meaning: str
    action: str


GUIDANCE: dict[str, Guidance] = {
    # ---- services.platform.errors.Reason ----
    Reason.GAME_NOT_FOUND: Guidance("NOT_FOUND", "no match has that id",
                                    "drop the id; go back to the lobby"),
    Reason.GAME_EXISTS: Guidance("ALREADY_EXISTS", "CreateGame with an id already used",
                                 "lobby only: choose another id"),
    Reason.STALE_EXPECTED_SEQ: Guidance(
        "ABORTED", "`expected_seq` is not the log's last seq: something happened first",
        "apply the events you missed (or GetView), decide again, resend with a new "
        "`command_id`"),
    Reason.CONCURRENT_COMMAND: Guidance(
        "ABORTED", "another command was appended at the same moment",
        "as `ERROR_REASON_STALE_EXPECTED_SEQ`: reload, decide again"),
    Reason.NOT_YOUR_SEAT: Guidance("PERMISSION_DENIED", "acting for a seat you do not hold",
                                   "a bug: players act for their own seat only"),
    Reason.NOT_SEATED: Guidance("PERMISSION_DENIED / FAILED_PRECONDITION",
                                "the call needs a seat at the match or table",
                                "join the table first"),
    Reason.ROLE_REQUIRED: Guidance("PERMISSION_DENIED",
                                   "a service or admin method (CreateGame, ControlSeat, a "
                                   "`seat` field, `server_seed`)", "not for apps"),
    Reason.GAME_NOT_OVER: Guidance("FAILED_PRECONDITION",
                                   "ExportLog or Rematch before the match ended",
                                   "wait for the final event"),
    Reason.SPECTATORS_NOT_ALLOWED: Guidance(
        "PERMISSION_DENIED", "the table admits no spectators",
        "say so; the host can open a table with `spectators_allowed`"),
    Reason.INVALID_REQUEST: Guidance("INVALID_ARGUMENT",
                                     "a field outside what the method accepts "
                                     "(`ErrorInfo.metadata[\"field\"]` names it)",
                                     "a bug in the app: fix the request"),
    Reason.UNKNOWN_GAME_TYPE: Guidance("INVALID_ARGUMENT", "a game type the server lacks",
                                       "offer only GAME_TYPE_HOKM and GAME_TYPE_HAND"),
    Reason.MALFORMED_REQUEST: Guidance("INVALID_ARGUMENT",
                                       "the request's bytes do not parse",
                                       "regenerate the client from these protos"),
    Reason.INVALID_DISPLAY_NAME: Guidance("INVALID_ARGUMENT",
                                          "a display name the server does not accept",
                                          "ask the player for another name"),
    Reason.UNKNOWN_ENUM_VALUE: Guidance("INVALID_ARGUMENT",
                                        "an enum value this server does not know",
                                        "an app newer than the server: send a known value"),
    Reason.UNAUTHENTICATED: Guidance("UNAUTHENTICATED", "no bearer token",
                                     "sign in (AccountsService) and send the access token"),
    Reason.TOKEN_EXPIRED: Guidance("UNAUTHENTICATED", "the token's time is up",
                                   "Refresh with the session's refresh token (else sign in "
                                   "again), then retry the call"),
    Reason.TOKEN_INVALID: Guidance("UNAUTHENTICATED",
                                   "badly signed or malformed token, or an unknown role",
                                   "discard the token; sign in again"),
    Reason.RATE_LIMITED: Guidance("RESOURCE_EXHAUSTED", "too many calls of this method",
                                  "wait the `RetryInfo` delay, then retry"),
    Reason.TOO_MANY_STREAMS: Guidance("RESOURCE_EXHAUSTED",
                                      "too many open Subscribe/WatchTable streams",
                                      "cancel streams you no longer read; retry after "
                                      "`RetryInfo` if given"),
    Reason.INTERNAL: Guidance("INTERNAL", "a server fault; `metadata[\"ref\"]` identifies it",
                              "retry later; report the ref"),
    Reason.STORE_UNAVAILABLE: Guidance(
        "UNAVAILABLE", "the database behind the service was unreachable for a moment",
        "wait the `RetryInfo` delay and retry the same call (the same `command_id` applies "
        "a command once)"),
    Reason.TOO_MANY_SPECTATORS: Guidance(
        "RESOURCE_EXHAUSTED", "the match (or table) has as many spectators as this server "
        "admits (a seat's own stream is never refused this way)",
        "say the match is full of spectators; retry after `RetryInfo`"),
    Reason.ADDRESS_LIMITED: Guidance(
        "RESOURCE_EXHAUSTED", "your network address holds its share of this server's "
        "streams or calls in progress (shared by everyone behind that address)",
        "cancel streams you no longer read; retry after `RetryInfo`"),
    Reason.SERVER_BUSY: Guidance(
        "RESOURCE_EXHAUSTED", "the server holds all the streams, or handles all the calls, "
        "it serves well",
        "retry after `RetryInfo` (a new connection may reach another replica)"),
    Reason.SESSION_REVOKED: Guidance(
        "UNAUTHENTICATED", "the token's session was ended (signed out, signed out "
        "everywhere, or its refresh token reused); its open streams end with this too",
        "sign in again"),
    Reason.PLAYER_BANNED: Guidance(
        "PERMISSION_DENIED", "an operator banned this player (`metadata` `until_ms`, empty "
        "when the ban lasts until lifted, and `ban_reason`); their open streams end with this "
        "too", "show the reason and when the ban ends; do not retry before then"),
    Reason.ACCOUNT_DELETED: Guidance(
        "UNAUTHENTICATED", "the token's player deleted their account (or an operator erased "
        "it)", "forget the account's tokens and device secret; a new sign-in is a new player"),
    Reason.STREAM_BACKLOG: Guidance(
        "RESOURCE_EXHAUSTED", "a `Play` stream's client stopped reading long enough for the "
        "server's queue of its messages to fill; the stream ended",
        "open `Play` again with the last seq received as `after_seq`; resend the commands "
        "whose outcome did not arrive (same `command_id`)"),
    # ---- services.lobby.reasons.LobbyReason (shared values are listed above) ----
    LobbyReason.TABLE_NOT_FOUND: Guidance("NOT_FOUND", "no table has that id or invite code",
                                          "refresh the table list"),
    LobbyReason.TABLE_NOT_WAITING: Guidance("FAILED_PRECONDITION",
                                            "the table is playing, finished or closed",
                                            "GetTable; watch or pick another table"),
    LobbyReason.TABLE_FULL: Guidance("FAILED_PRECONDITION", "no empty seat",
                                     "pick another table, or QuickMatch"),
    LobbyReason.SEAT_TAKEN: Guidance("FAILED_PRECONDITION", "someone sits there",
                                     "choose another seat (or leave `seat` unset)"),
    LobbyReason.NOT_HOST: Guidance("PERMISSION_DENIED", "only the host may do this",
                                   "hide the control for others"),
    LobbyReason.INVITE_REQUIRED: Guidance("PERMISSION_DENIED",
                                          "a private table is joined by its invite code",
                                          "ask for the code"),
    LobbyReason.CONCURRENT_CHANGE: Guidance("ABORTED",
                                            "the table changed while the call ran",
                                            "retry the call"),
    LobbyReason.INVALID_SETTINGS: Guidance("INVALID_ARGUMENT",
                                           "table settings outside the offered values",
                                           "offer only the values in lobby.proto"),
    LobbyReason.GAME_SERVICE_UNAVAILABLE: Guidance(
        "UNAVAILABLE", "the game service did not answer while starting the match",
        "retry StartGame / Rematch after a moment"),
    LobbyReason.DEVICE_SIGN_IN_RETIRED: Guidance(
        "FAILED_PRECONDITION", "the lobby's SignInGuest (a device id alone) is retired on "
        "this server", "sign in with AccountsService (SignInGuest with the device secret, or "
        "SignInWithIdToken)"),
    # ---- services.tournament.reasons.TournamentServiceReason ----
    TournamentServiceReason.TOURNAMENT_NOT_FOUND: Guidance(
        "NOT_FOUND", "no tournament has that id", "refresh the list (ListTournaments)"),
    TournamentServiceReason.CONCURRENT_STEP: Guidance(
        "ABORTED", "the tournament's log kept moving under the call (other replicas' steps)",
        "retry the call"),
    TournamentServiceReason.NOT_REGISTERED: Guidance(
        "NOT_FOUND", "the caller is in no entrant of the tournament", 'show "not entered"'),
    TournamentServiceReason.TOO_MANY_OPEN_TOURNAMENTS: Guidance(
        "RESOURCE_EXHAUSTED", "the caller hosts as many open (registering or running) "
        "tournaments as the server allows one player (`metadata` `open`, `limit`)",
        "say so; offer to cancel one that has not started, or wait until one ends"),
    TournamentServiceReason.TOURNAMENT_CREATION_RESTRICTED: Guidance(
        "PERMISSION_DENIED", "the server lets only players signed in with an account (not "
        "guests), or only operators, create tournaments (`metadata` `creators`)",
        "hide tournament creation for such callers"),
    # ---- services.stats.service.StatsReason ----
    StatsReason.PLAYER_NOT_FOUND: Guidance("NOT_FOUND", "no figures for this player (no "
                                           "finished match counted yet)",
                                           "show empty statistics"),
    # ---- services.accounts.reasons.AccountsReason ----
    AccountsReason.DEVICE_SECRET_INVALID: Guidance(
        "UNAUTHENTICATED", "the device signed in before, and the call lacks its device "
        "secret (or carries another)",
        "send the secret the device's first sign-in returned"),
    AccountsReason.REFRESH_TOKEN_INVALID: Guidance(
        "UNAUTHENTICATED", "the refresh token is unknown, expired, or of a session that ended",
        "sign in again"),
    AccountsReason.REFRESH_TOKEN_REUSED: Guidance(
        "UNAUTHENTICATED", "the refresh token was spent already; its session is ended now",
        "sign in again (and never send a refresh token twice)"),
    AccountsReason.GUEST_ALREADY_MOVED: Guidance(
        "FAILED_PRECONDITION", "the lobby guest the call's token names moved to the accounts "
        "service already, from another device id",
        "sign in from that device id (with its device secret)"),
    AccountsReason.NO_SESSION: Guidance(
        "FAILED_PRECONDITION", "the access token names no session (it came from the lobby's "
        "guest sign-in)", "sign in through AccountsService first"),
    AccountsReason.IDENTITY_LINKED_ELSEWHERE: Guidance(
        "FAILED_PRECONDITION", "the identity is linked to another player already",
        "sign in with it (SignInWithIdToken) to reach that player, or unlink it there first"),
    AccountsReason.PROVIDER_ALREADY_LINKED: Guidance(
        "FAILED_PRECONDITION", "the player has another identity of that provider linked",
        "unlink that one first (UnlinkIdentity)"),
    AccountsReason.IDENTITY_NOT_LINKED: Guidance(
        "NOT_FOUND", "the player has no such identity linked",
        "refresh the list (ListIdentities)"),
    AccountsReason.LAST_WAY_IN: Guidance(
        "FAILED_PRECONDITION", "the identity is the player's last way in (no other identity, "
        "no device)", "link another identity first"),
    AccountsReason.ACCOUNT_NOT_FOUND: Guidance(
        "NOT_FOUND", "no player of that id has signed in to the accounts service (a mistyped "
        "id, or a lobby guest that has not moved over)",
        "check the id; show the player without a profile"),
    AccountsReason.INVALID_AVATAR_ID: Guidance(
        "INVALID_ARGUMENT", "the avatar id is not 1 to 64 characters of `a-z`, `0-9`, `-` and "
        "`_` starting with a letter or digit", "send one of the app's own avatar ids"),
    AccountsReason.INVALID_LOCALE: Guidance(
        "INVALID_ARGUMENT", "the locale is not a BCP 47 tag of a language, an optional script "
        "and an optional region (`fa`, `fa-IR`)",
        "send the language the person chose in that form"),
    # ---- services.accounts.reasons.ModerationReason ----
    ModerationReason.UNKNOWN_PLAYER: Guidance(
        "NOT_FOUND", "the accounts service knows no player with this id",
        "search for the player (FindPlayers) and use the id it shows"),
    # ---- services.chat.reasons.ChatReason ----
    ChatReason.NOT_AT_TABLE: Guidance(
        "PERMISSION_DENIED", "the caller neither sits at the table nor may watch it (the "
        "table takes no spectators)", "offer the table's talk only to its people"),
    ChatReason.CHAT_OFF: Guidance(
        "FAILED_PRECONDITION", "the host turned the table's talk off (`TableSettings.chat`)",
        "hide the talk while the table's settings say so"),
    ChatReason.CHAT_PHRASES_ONLY: Guidance(
        "FAILED_PRECONDITION", "the table allows quick phrases only, and the call sent text",
        "offer the quick phrases, not the keyboard"),
    ChatReason.CHAT_TOO_LONG: Guidance(
        "INVALID_ARGUMENT", "the text has more characters than the server's limit once "
        "cleaned (`ErrorInfo.metadata[\"max_chars\"]`)", "stop typing at the limit"),
    ChatReason.CHAT_TEXT_INVALID: Guidance(
        "INVALID_ARGUMENT", "nothing visible is left of the text once control, direction "
        "and invisible characters are removed (or neither text nor a phrase was sent)",
        "send what the person typed, and nothing when it is empty"),
    ChatReason.UNKNOWN_PHRASE: Guidance(
        "INVALID_ARGUMENT", "no quick phrase has that id", "use the ids ListPhrases gives"),
    ChatReason.CHAT_RATE_LIMITED: Guidance(
        "RESOURCE_EXHAUSTED", "the player sent as many messages as the window allows (5 in "
        "10 s by default)", "wait for the RetryInfo delay before sending again"),
    ChatReason.CANNOT_MUTE_SELF: Guidance(
        "INVALID_ARGUMENT", "a player muting themselves", "offer mute on other players only"),
    ChatReason.CHAT_UNAVAILABLE: Guidance(
        "UNAVAILABLE", "where the table's talk is kept (NATS) did not answer just now",
        "retry after the RetryInfo delay"),
    # ---- services.chat.reasons.ReportReason ----
    ReportReason.NOT_IN_GAME: Guidance(
        "FAILED_PRECONDITION", "the caller, or the player reported, did not sit in the match "
        "(`ErrorInfo.metadata[\"field\"]` says which)",
        "offer reports on the match's players only"),
    ReportReason.CANNOT_REPORT_SELF: Guidance(
        "INVALID_ARGUMENT", "a player reporting themselves", "offer reports on others only"),
    ReportReason.REPORT_NOT_FOUND: Guidance(
        "NOT_FOUND", "no kept report has that id (it may have expired)",
        "reload the queue (ListReports)"),
    # ---- services.accounts.oidc.OidcReason ----
    OidcReason.ID_TOKEN_INVALID: Guidance(
        "UNAUTHENTICATED", "not a well-formed ID token with a good signature",
        "get a new ID token from the provider and retry; report it if it recurs"),
    OidcReason.ID_TOKEN_EXPIRED: Guidance(
        "UNAUTHENTICATED", "the ID token has expired", "get a fresh ID token and retry"),
    OidcReason.ID_TOKEN_NOT_YET_VALID: Guidance(
        "UNAUTHENTICATED", "the ID token is not valid yet (`nbf` or `iat` in the future)",
        "ask the user to check the device's clock"),
    OidcReason.ID_TOKEN_WRONG_AUDIENCE: Guidance(
        "UNAUTHENTICATED", "the ID token was issued to another app (`aud`)",
        "a configuration bug: use the client id the server is configured with"),
    OidcReason.ID_TOKEN_WRONG_ISSUER: Guidance(
        "UNAUTHENTICATED", "the ID token's issuer is not the named provider's",
        "name the provider that issued the token"),
    OidcReason.ID_TOKEN_UNKNOWN_KEY: Guidance(
        "UNAUTHENTICATED", "the ID token names none of the provider's keys",
        "get a new ID token and retry"),
    OidcReason.ID_TOKEN_ALGORITHM_REFUSED: Guidance(
        "UNAUTHENTICATED", "the ID token is signed with an algorithm the provider does not "
        "use", "send the provider's token as issued"),
    OidcReason.IDENTITY_PROVIDER_UNAVAILABLE: Guidance(
        "UNAVAILABLE", "the provider's keys could not be fetched just now",
        "retry after the `RetryInfo` delay"),
    OidcReason.UNKNOWN_IDENTITY_PROVIDER: Guidance(
        "INVALID_ARGUMENT", "no identity provider of that name (or issuer) is configured on "
        "this server", "offer only the providers the server accepts"),
}

ENGINE_MEANINGS: dict[str, str] = {
    Code.NOT_YOUR_TURN: "another seat is to act",
    Code.GAME_OVER: "the match is over",
    Code.WRONG_PHASE: "a command of another phase (e.g. a card while trump is chosen)",
    Code.WRONG_GAME: "a command of another game (Hand's in a Hokm match)",
    Code.MALFORMED_COMMAND: "the command's oneof is empty or a field is missing",
    Code.INVALID_CARD: "not a card id",
    Code.INVALID_SEAT: "no such seat",
    Code.INVALID_RULES: "rules options the game does not accept (CreateGame)",
    Code.INVALID_PLAYERS: "a player count the game does not seat (CreateGame)",
    HokmCode.NOT_HAKEM: "only the hakem declares trump or sets cards aside",
    HokmCode.TRUMP_NOT_DECLARED: "a card played before trump is declared",
    HokmCode.CARD_NOT_IN_HAND: "a card the seat does not hold",
    HokmCode.MUST_FOLLOW_SUIT: "a card off the led suit while holding the led suit",
    HokmCode.WRONG_SET_ASIDE_COUNT: "three players: not exactly 4 cards laid aside",
    HokmCode.DUPLICATE_CARD: "the same card twice in one set-aside",
    HokmCode.NO_SUCH_PILE: "two players: a pile other than 0 (A) or 1 (B)",
    HokmCode.INVALID_SUIT: "a suit outside ♠ ♥ ♣ ♦",
    ControlCode.BOT_LEVEL_REQUIRED: "ControlSeat with `bot` and no `bot_level`",
    TournamentCode.INVALID_OPTIONS: "tournament options outside what the server accepts",
    TournamentCode.INVALID_ID: ("an identifier or number the tournament engine refuses: the "
                                "server makes every tournament id, so through the API a "
                                "rating outside ±1,000,000 at registration (service tokens)"),
    TournamentCode.INVALID_SEED: "a seating seed of the wrong size (admin tokens only)",
    TournamentCode.REGISTRATION_CLOSED: "registering or withdrawing after registration closed",
    TournamentCode.ALREADY_REGISTERED: "the entrant is registered already",
    TournamentCode.PLAYER_ALREADY_ENTERED: "a player of the team is in another entrant",
    TournamentCode.WRONG_TEAM_SIZE: "a team of another size than the format's (or a player "
                                    "named twice)",
    TournamentCode.FULL: "the tournament has as many entrants as it takes",
    TournamentCode.UNKNOWN_ENTRANT: "no such entrant in the tournament",
    TournamentCode.UNKNOWN_PLAYER: "the player is in no entrant of the tournament",
    TournamentCode.ALREADY_WITHDRAWN: "the entrant withdrew already",
    TournamentCode.NOT_STARTED: "the tournament has not started",
    TournamentCode.ALREADY_STARTED: "the tournament has started already",
    TournamentCode.TOO_FEW_ENTRANTS: "too few entrants to start",
    TournamentCode.FINISHED: "the tournament is over",
    TournamentCode.WRONG_ROUND: "a result or table of another round than the current one",
    TournamentCode.UNKNOWN_TABLE: "no such table in the round",
    TournamentCode.RESULT_ALREADY_RECORDED: "the table's result is recorded already",
    TournamentCode.INVALID_RESULT: "a match result that does not fit the table",
    TournamentCode.NOT_TIMED_OUT: "a table declared abandoned before its time ran out",
}


@dataclass(frozen=True)
class Source:
    """One enum of reasons and the heading of its table."""

    heading: str
    enum: type[StrEnum]
    engine: bool


SOURCES: tuple[Source, ...] = (
    Source("Platform (every service): `services/platform/errors.py` `Reason`", Reason, False),
    Source("Lobby: `services/lobby/reasons.py` `LobbyReason`", LobbyReason, False),
    Source("Every game's rules: `engine/core/errors.py` `Code`", Code, True),
    Source("Hokm's rules: `engine/hokm/errors.py` `HokmCode`", HokmCode, True),
    Source("Hand's rules: `engine/hand/errors.py` `HandCode`", HandCode, True),
    Source("Seat control (service tokens): `engine/core/control.py` `ControlCode`",
           ControlCode, True),
    Source("Tournaments: `engine/tournament/errors.py` `TournamentCode`", TournamentCode, True),
    Source("The tournament service: `services/tournament/reasons.py` "
           "`TournamentServiceReason`", TournamentServiceReason, False),
    Source("Statistics: `services/stats/service.py` `StatsReason`", StatsReason, False),
    Source("Accounts: `services/accounts/reasons.py` `AccountsReason`", AccountsReason, False),
    Source("Sign-in with OpenID Connect: `services/accounts/oidc.py` `OidcReason`", OidcReason,
           False),
    Source("Moderation: `services/accounts/reasons.py` `ModerationReason`", ModerationReason,
           False),
    Source("Table talk: `services/chat/reasons.py` `ChatReason`", ChatReason, False),
    Source("Reports: `services/chat/reasons.py` `ReportReason`", ReportReason, False),
)


def all_reasons() -> set[str]:
    """Every reason the API can send today, as the code names it (lower snake case)."""
    return {member.value for source in SOURCES for member in source.enum}


def unlisted_reasons() -> set[str]:
    """The reasons ``dast.v1.ErrorReason`` has no value for (each one a bug: add it)."""
    return {reason for reason in all_reasons() if not is_listed(reason)}


def member_docstrings(enum: type[StrEnum]) -> dict[str, str]:
    """The attribute docstrings of ``enum``'s members (the string under each member)."""
    tree = ast.parse(inspect.getsource(enum))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for current, following in itertools.pairwise(body):
        if (isinstance(current, ast.Assign) and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            name = current.targets[0]
            if isinstance(name, ast.Name):
                docs[name.id] = " ".join(following.value.value.split())
    return docs


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(source: Source, listed: set[str]) -> list[str]:
    """The markdown table of ``source``; values in ``listed`` (shown in an earlier table)
    are named with a pointer instead of repeated."""
    lines = [f"#### {source.heading}", ""]
    docs = member_docstrings(source.enum)
    if source.engine:
        lines += ["| reason | status | meaning |", "|---|---|---|"]
    else:
        lines += ["| reason | status | meaning | what the app does |", "|---|---|---|---|"]
    for member in source.enum:
        name = wire_name(member.value)
        if member.value in listed:
            if not source.engine:
                lines.append(f"| `{name}` | (as above) | | |")
            else:
                lines.append(f"| `{name}` | (as above) | |")
            continue
        if source.engine:
            status = "INVALID_ARGUMENT" if member in MALFORMED else "FAILED_PRECONDITION"
            meaning = docs.get(member.name) or ENGINE_MEANINGS.get(member.value)
            if meaning is None:
                raise SystemExit(f"{source.enum.__name__}.{member.name}: add a docstring "
                                 "or an ENGINE_MEANINGS entry")
            lines.append(f"| `{name}` | {status} | {_cell(meaning)} |")
        else:
            guide = GUIDANCE.get(member.value)
            if guide is None:
                raise SystemExit(f"{source.enum.__name__}.{member.name}: add a GUIDANCE "
                                 "entry (status, meaning, what the app does)")
            lines.append(f"| `{name}` | {guide.status} | {_cell(guide.meaning)} | "
                         f"{_cell(guide.action)} |")
        listed.add(member.value)
    return [*lines, ""]


def generated_block() -> str:
    """The text between the markers: every table, in :data:`SOURCES` order."""
    lines: list[str] = []
    listed: set[str] = set()
    for source in SOURCES:
        lines += table(source, listed)
    return "\n".join(lines)


def with_block(guide: str) -> str:
    """``guide`` with its generated part replaced by :func:`generated_block`."""
    before, begin, rest = guide.partition(BEGIN)
    _, end, after = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{GUIDE}: the markers {BEGIN!r} and {END!r} are missing")
    return f"{before}{BEGIN}\n{generated_block()}{END}{after}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when the guide's tables are stale")
    arguments = parser.parse_args()
    missing = unlisted_reasons()
    if missing:
        print("protos/dast/v1/errors.proto lacks ErrorReason values for: "
              + ", ".join(sorted(wire_name(reason) for reason in missing)), file=sys.stderr)
        return 1
    current = GUIDE.read_text(encoding="utf-8")
    updated = with_block(current)
    if arguments.check:
        if updated != current:
            print(f"{GUIDE} is stale: run scripts/reason_tables.py", file=sys.stderr)
            return 1
        return 0
    if updated != current:
        GUIDE.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
