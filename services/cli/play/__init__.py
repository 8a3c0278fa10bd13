"""``dast play``: a line-based terminal client for a running dast server.

Sign in through the accounts service (as this machine's guest device, its secret kept in
``~/.dast/device-secrets.json`` per server, or with ``--id-token`` from an identity
provider; the access token is refreshed by itself), create or join a table (or quick-match),
then play Hokm or Hand against bots or people. Each event prints one line; when it is your
turn the screen shows your hand (trump first), the trick or the table melds, scores, the
turn timer and who is a bot, then a numbered list of your legal moves. At ``play>`` type a
number, a card (``A♠``, ``AS``), ``a`` to let the basic bot choose, ``?`` for help or ``q``
to quit.
With ``--receipts FILE`` the seat keeps every chain hash it is sent, for
``dast verify --receipts`` (:mod:`services.cli.play.receipts`).
"""

from __future__ import annotations

import hashlib
import os
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import grpc
import typer
from rich.console import Console

from dast.v1 import common_pb2, hokm_pb2, lobby_pb2
from engine.core.cards import card_name, parse_card
from engine.core.protocol import BOT_LEVELS
from services.bot.policies import DEFAULT_LEVEL, SeatView, decide
from services.cli.play import render
from services.cli.play.credentials import DeviceSecrets
from services.cli.play.receipts import GAME_PLACEHOLDER, ReceiptsError, ReceiptsFile
from services.cli.play.session import STREAM_ENDED, Session
from services.cli.play.tournament import play_tournament, tournament_channel

DATA_DIR = "~/.dast"
"""Where ``dast play`` keeps this machine's guest device id and its secrets."""
HELP = ("number = that move · card (A♠ or AS) = play it · a = let the basic bot choose · "
        "r = redraw · q = quit")
_WIRE_LEVELS = lobby_pb2.BotLevel.DESCRIPTOR.values_by_name
LEVELS: dict[str, lobby_pb2.BotLevel.ValueType] = {
    level: lobby_pb2.BotLevel.Value(f"BOT_LEVEL_{level.upper()}")
    for level in BOT_LEVELS if f"BOT_LEVEL_{level.upper()}" in _WIRE_LEVELS
}
"""The bot levels a table offers: every level of the games' registry
(:data:`engine.core.protocol.BOT_LEVELS`, weakest first) by its ``BotLevel`` on the wire."""
LEVEL_CHOICES = "|".join(LEVELS)
LOBBY_HELP = f"Commands: start · bot SEAT [{LEVEL_CHOICES}] · seat N · show · quit"


class UnknownLevel(ValueError):
    """A bot level no table offers (the message names the ones it does)."""

    def __init__(self, level: str) -> None:
        shown = level if len(level) <= 32 else level[:32] + "…"
        super().__init__(f"no bot level {shown!r}: choose {', '.join(LEVELS)}")


def bot_level(name: str) -> lobby_pb2.BotLevel.ValueType:
    """The wire ``BotLevel`` of a level's name (any case).

    :raises UnknownLevel: for a name that is no level of :data:`LEVELS`.
    """
    found = LEVELS.get(name.strip().lower())
    if found is None:
        raise UnknownLevel(name)
    return found


@dataclass
class Options:
    """What the player asked for on the command line."""

    game: str = "hokm"
    players: int = 4
    target: int = 0
    turn_seconds: int = 0
    bots: str = "basic"
    private: bool = False
    table: str = ""
    invite: str = ""
    quick: bool = False
    start: bool = False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Client:
    """The interactive loop over a :class:`Session` (``ask`` and ``say`` are the terminal)."""

    def __init__(self, session: Session, ask: Callable[[str], str],
                 say: Callable[[str], None]) -> None:
        self.session = session
        self.ask = ask
        self.say = say
        self.teams: render.Teams | None = None
        """The partnerships of the match being played (None: every seat alone)."""

    # ---- the lobby ----
    def settings(self, options: Options) -> lobby_pb2.TableSettings:
        """The table settings of ``options``."""
        settings = lobby_pb2.TableSettings(
            target_score=options.target, turn_seconds=options.turn_seconds,
            private=options.private, bot_level=bot_level(options.bots),
        )
        if options.game == "hand":
            settings.game_type = common_pb2.GAME_TYPE_HAND
            settings.hand.players = options.players
            settings.hand.partnerships = options.players == 4
        else:
            settings.game_type = common_pb2.GAME_TYPE_HOKM
            variants = {4: 1, 3: 2, 2: 3}
            settings.hokm.variant = variants.get(options.players, 1)  # type: ignore[assignment]
        return settings

    def table(self, options: Options) -> lobby_pb2.Table:
        """Join, quick-match or create the table and wait until its match starts."""
        call = self.session.call
        if options.invite or options.table:
            table = call("JoinTable", lobby_pb2.JoinTableRequest(
                table_id=options.table, invite_code=options.invite)).table
        elif options.quick:
            settings = self.settings(options)
            table = call("QuickMatch", lobby_pb2.QuickMatchRequest(
                game_type=settings.game_type, hokm_variant=settings.hokm.variant,
                hand_players=settings.hand.players)).table
        else:
            table = call("CreateTable", lobby_pb2.CreateTableRequest(
                settings=self.settings(options))).table
        assert isinstance(table, lobby_pb2.Table)
        self.show_table(table)
        if table.status == lobby_pb2.TABLE_STATUS_PLAYING:
            return table
        if table.host_id == self.session.player_id:
            return table if options.start and self.start(table) else self.host(table)
        return self.wait_for_start(table)

    def show_table(self, table: lobby_pb2.Table) -> None:
        """Print the table's id, invite code and seats."""
        code = f" · invite code {table.invite_code}" if table.invite_code else ""
        self.say(f"Table {table.table_id}{code}")
        for seat in table.seats:
            who = seat.display_name or "(empty)"
            self.say(f"  seat {seat.seat}: {who}{' [bot]' if seat.is_bot else ''}")

    def start(self, table: lobby_pb2.Table) -> bool:
        """Start the match (empty seats get bots)."""
        started = self.session.call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))
        table.CopyFrom(started.table)
        return True

    def host(self, table: lobby_pb2.Table) -> lobby_pb2.Table:
        """The host's lobby prompt: ``start``, ``bot SEAT [LEVEL]``, ``seat N``, ``show``."""
        self.say(LOBBY_HELP)
        while True:
            words = self.ask("lobby> ").split()
            try:
                if not words or words[0] == "show":
                    table = self.session.call("GetTable", lobby_pb2.GetTableRequest(
                        table_id=table.table_id)).table
                    self.show_table(table)
                elif words[0] == "start":
                    self.start(table)
                    return table
                elif words[0] == "bot" and len(words) in (2, 3):
                    seat = int(words[1])
                    level = bot_level(words[2] if len(words) == 3 else DEFAULT_LEVEL)
                    table = self.session.call("AddBot", lobby_pb2.AddBotRequest(
                        table_id=table.table_id, seat=seat, level=level)).table
                    self.show_table(table)
                elif words[0] == "seat" and len(words) == 2:
                    table = self.session.call("ChooseSeat", lobby_pb2.ChooseSeatRequest(
                        table_id=table.table_id, seat=int(words[1]))).table
                    self.show_table(table)
                elif words[0] in ("q", "quit"):
                    raise typer.Exit(0)
                else:
                    self.say("?")
            except grpc.RpcError as error:
                self.say(f"refused: {error.details()}")
            except UnknownLevel as error:
                self.say(str(error))
            except ValueError:
                self.say("seat numbers are 0, 1, …")

    def wait_for_start(self, table: lobby_pb2.Table) -> lobby_pb2.Table:
        """Follow the table until the host starts the match."""
        self.say("Waiting for the host to start…")
        updates = self.session.lobby.WatchTable(
            lobby_pb2.WatchTableRequest(table_id=table.table_id))
        for message in updates:
            update = message.update
            if update.table.status == lobby_pb2.TABLE_STATUS_PLAYING:
                updates.cancel()
                started: lobby_pb2.Table = update.table
                return started
            if update.table.status == lobby_pb2.TABLE_STATUS_CLOSED:
                self.say("The table was closed.")
                break
            if update.kind == lobby_pb2.TABLE_UPDATE_KIND_PLAYER_JOINED:
                self.say(f"{update.player_id} joined seat {update.seat}")
        raise typer.Exit(1)

    # ---- the match ----
    def play_match(self, game_id: str) -> None:
        """Play the match until it is over (or the player quits)."""
        self.session.follow(game_id)
        if self.session.receipts is not None:
            self.say(f"Keeping receipts in {self.session.receipts.path}")
        shown_seq = -1
        last_seq = 0
        while True:
            reply = self.session.view(game_id)
            seat_view = SeatView.of(reply)
            self.teams = render.partnerships(seat_view.view)
            last_seq = max(last_seq, self._print_events(0.0, last_seq, game_id))
            if seat_view.is_over:
                # Take the final events off the stream before leaving: they print the last
                # trick and carry the seat's last receipts (the seal covers up to them).
                deadline = time.monotonic() + 2.0
                while last_seq < reply.seq and time.monotonic() < deadline:
                    last_seq = max(last_seq, self._print_events(0.1, last_seq, game_id))
                self.say(self._result(seat_view))
                return
            view = seat_view.view
            if view.HasField("turn") and view.turn == view.seat and view.legal:
                if reply.seq != shown_seq:
                    # Print the events that led here before the screen (they may still be on
                    # their way through the stream).
                    deadline = time.monotonic() + 0.5
                    while last_seq < reply.seq and time.monotonic() < deadline:
                        last_seq = max(last_seq, self._print_events(0.1, last_seq, game_id))
                    self._screen(game_id, seat_view)
                    shown_seq = reply.seq
                self._turn(game_id, seat_view)
            else:
                last_seq = max(last_seq, self._print_events(1.0, last_seq, game_id))

    def _print_events(self, wait: float, last_seq: int, game_id: str) -> int:
        """Print queued events (waiting up to ``wait`` s for the first); the last seq seen."""
        try:
            event = self.session.events.get(timeout=wait) if wait else (
                self.session.events.get_nowait())
        except queue.Empty:
            return last_seq
        while True:
            if event is STREAM_ENDED:
                self.session.follow(game_id, last_seq)  # reconnect from where we were
            else:
                last_seq = max(last_seq, event.seq)
                line = render.event_line(event, self.teams)
                if line:
                    self.say(line)
            try:
                event = self.session.events.get_nowait()
            except queue.Empty:
                return last_seq

    def _screen(self, game_id: str, seat_view: SeatView) -> None:
        table = self.session.table_of_game(game_id)
        if isinstance(seat_view.view, hokm_pb2.HokmView):
            lines = render.hokm_screen(seat_view.view, table, _now_ms())
        else:
            lines = render.hand_screen(seat_view.view, table, _now_ms())
        for line in lines:
            self.say(line)

    def _turn(self, game_id: str, seat_view: SeatView) -> None:
        view = seat_view.view
        legal = list(view.legal)
        command: Any
        if isinstance(view, hokm_pb2.HokmView) and legal[0].WhichOneof("kind") == (
            "set_aside_cards"
        ):
            command = self._set_aside(view)
        else:
            answer = self.ask("play> ").strip()
            if answer in ("q", "quit"):
                raise typer.Exit(0)
            if answer in ("?", "h", "help"):
                self.say(HELP)
                return
            if answer == "r":
                self._screen(game_id, seat_view)
                return
            command = self._choose(answer, seat_view, game_id)
            if command is None:
                self.say(f"not a legal move: {answer!r} ({HELP})")
                return
        try:
            self.session.submit(game_id, seat_view.game, command, seat_view.seq)
        except grpc.RpcError as error:
            self.say(f"refused: {error.details()}")
        except TimeoutError as error:
            self.say(f"no answer: {error}")

    def _choose(self, answer: str, seat_view: SeatView, game_id: str) -> Any | None:
        legal = render.ordered_legal(seat_view.view)
        if answer == "a":
            return decide(seat_view, "basic", game_id)
        if answer.isdigit() and 1 <= int(answer) <= len(legal):
            return legal[int(answer) - 1]
        if seat_view.game == "hokm":
            try:
                card = parse_card(answer.upper().replace("T", "10"))
            except ValueError:
                return None
            for command in legal:
                if command.WhichOneof("kind") == "play_card" and (
                    command.play_card.card == card
                ):
                    return command
        return None

    def _set_aside(self, view: hokm_pb2.HokmView) -> hokm_pb2.HokmCommand:
        hand = render.sorted_hokm_hand(view.hand, view.trump)
        self.say("Lay 4 cards aside: " + "  ".join(
            f"{i}) {card_name(c)}" for i, c in enumerate(hand, 1)))
        while True:
            words = self.ask("aside> ").split()
            if words == ["a"]:
                chosen = sorted(hand, key=lambda c: (c // 13 == view.trump - 1, c % 13))[:4]
                return hokm_pb2.HokmCommand(set_aside_cards=hokm_pb2.SetAsideCards(cards=chosen))
            try:
                picks = {hand[int(w) - 1] for w in words}
            except (ValueError, IndexError):
                picks = set()
            if len(picks) == 4:
                return hokm_pb2.HokmCommand(
                    set_aside_cards=hokm_pb2.SetAsideCards(cards=sorted(picks)))
            self.say("four different numbers from the list, or a")

    def _result(self, seat_view: SeatView) -> str:
        view = seat_view.view
        won = view.seat in view.winners
        figures = view.scores if isinstance(view, hokm_pb2.HokmView) else view.totals
        final = render.side_figures(figures, self.teams, view.seat, shared=True)
        return f"Match over: {'you win' if won else 'you lose'} · final {final}"


def sign_in(session: Session, secrets: DeviceSecrets, *, device_id: str, name: str,
            id_token: str = "", provider: str = "") -> None:
    """Sign the session in: with ``id_token`` when given, else as the guest of ``device_id``
    with the secret ``secrets`` keeps for the session's accounts server (a first sign-in's
    new secret is kept at once).

    :raises grpc.RpcError: as the accounts service answers.
    """
    if id_token:
        session.credentials.sign_in_with_id_token(id_token, provider, name)
        return
    server = session.accounts_target or session.target
    new_secret = session.sign_in(device_id, name, secrets.get(server))
    if new_secret:
        secrets.put(server, new_secret)


def _device_id(data_dir: str) -> str:
    """This machine's guest device id (kept under ``data_dir``)."""
    path = os.path.join(os.path.expanduser(data_dir), "device-id")
    if os.path.exists(path):
        with open(path) as stored:
            return stored.read().strip()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    device = "cli-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]
    with open(path, "w") as stored:
        stored.write(device)
    return device


def play(
    server: Annotated[str, typer.Option(help="host:port of the dast server.")] = "127.0.0.1:50051",
    game_server: Annotated[str, typer.Option(
        help="The game service, if apart from --server (several replicas: "
             "ipv4:HOST:PORT,HOST:PORT).")] = "",
    accounts_server: Annotated[str, typer.Option(
        help="The accounts service, if apart from --server.")] = "",
    name: Annotated[str, typer.Option(help="Your display name.")] = "",
    device: Annotated[str, typer.Option(help="Guest device id (default: kept in ~/.dast).")] = "",
    id_token: Annotated[str, typer.Option(
        help="Sign in with this ID token of an identity provider the server trusts, not as "
             "a guest.", metavar="JWT")] = "",
    provider: Annotated[str, typer.Option(
        help="With --id-token: the provider's name on the server (default: the one the "
             "token's issuer names).")] = "",
    game: Annotated[str, typer.Option(help="hokm or hand.")] = "hokm",
    players: Annotated[int, typer.Option(help="Seats: Hokm 4/3/2, Hand 2-4.")] = 4,
    target: Annotated[int, typer.Option(help="Hokm points to win: 3, 5, 7 or 10.")] = 0,
    turn_seconds: Annotated[int, typer.Option(help="15, 30, 45, 60 (0: untimed).")] = 30,
    bots: Annotated[str, typer.Option(
        help=f"Level of the bots filling seats: {', '.join(LEVELS)}.")] = DEFAULT_LEVEL,
    private: Annotated[bool, typer.Option(help="Unlisted table joined by invite code.")] = False,
    table: Annotated[str, typer.Option(help="Join this table id.")] = "",
    invite: Annotated[str, typer.Option(help="Join the private table of this code.")] = "",
    quick: Annotated[bool, typer.Option(help="Quick match into a public table.")] = False,
    start: Annotated[bool, typer.Option(help="Host: start at once (bots fill seats).")] = False,
    receipts: Annotated[str, typer.Option(
        help="Append every chain hash this seat is sent to FILE (JSON Lines), for dast verify "
             f"--receipts; {GAME_PLACEHOLDER} in FILE becomes the game id (a rematch without "
             "it gets FILE with its game id added).", metavar="FILE")] = "",
    tournament: Annotated[str, typer.Option(
        help="Enter this tournament and play its matches (services/cli/play/tournament.py).",
        metavar="ID")] = "",
    tournament_server: Annotated[str, typer.Option(
        help="The tournament service, if apart from --server (several replicas: "
             "ipv4:HOST:PORT,HOST:PORT).")] = "",
    partner: Annotated[str, typer.Option(
        help="With --tournament of registered pairs: your partner's player id. Your pair "
             "is entered once your partner names you with --partner too.",
        metavar="PLAYER_ID")] = "",
) -> None:
    """Play Hokm or Hand in the terminal against bots or people on a dast server."""
    console = Console(highlight=False)

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    if receipts and GAME_PLACEHOLDER not in receipts:
        # Refuse an unusable file before a table is made, not when the match starts.
        try:
            ReceiptsFile(Path(receipts).expanduser()).close()
        except ReceiptsError as error:
            say(f"dast: {error}")
            raise typer.Exit(2) from error
    if partner and not tournament:
        say("dast: --partner goes with --tournament (a pair enters a tournament together)")
        raise typer.Exit(2)
    try:
        bot_level(bots)
    except UnknownLevel as error:
        say(f"dast: --bots: {error}")
        raise typer.Exit(2) from error
    session = Session(server, game_server, accounts_server, receipts_template=receipts)
    try:
        sign_in(session, DeviceSecrets(Path(DATA_DIR, "device-secrets.json").expanduser()),
                device_id=device or _device_id(DATA_DIR), name=name, id_token=id_token,
                provider=provider)
        say(f"Signed in as {session.display_name} ({session.player_id})")
        client = Client(session, lambda prompt: console.input(prompt, markup=False), say)
        if tournament:
            with tournament_channel(tournament_server or server) as channel:
                play_tournament(session.authorized(channel), session.player_id, tournament,
                                client, say, partner_id=partner)
            return
        options = Options(game, players, target, turn_seconds, bots, private, table, invite,
                          quick, start)
        current = client.table(options)
        while True:
            client.play_match(current.game_id)
            if client.ask("rematch? [y/N] ").strip().lower() != "y":
                break
            current = session.call("Rematch", lobby_pb2.RematchRequest(
                table_id=current.table_id)).table
    except grpc.RpcError as error:
        say(f"dast: {error.code().name}: {error.details()}")
        raise typer.Exit(1) from error
    except ReceiptsError as error:
        say(f"dast: {error}")
        raise typer.Exit(2) from error
    except (EOFError, KeyboardInterrupt):
        raise typer.Exit(0) from None
    finally:
        session.close()
