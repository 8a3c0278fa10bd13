// A signed-in player: the accounts, lobby and game clients over one gRPC (HTTP/2) transport,
// every call carrying the session's access token (renewed by itself: session.ts), and the
// lobby calls an app makes to reach a match.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AccountsService, type SessionTokens } from "./gen/dast/v1/accounts_pb.js";
import { GameService } from "./gen/dast/v1/game_pb.js";
import {
  LobbyService,
  type BotLevel,
  type Table,
  type TableSettingsSchema,
} from "./gen/dast/v1/lobby_pb.js";
import { DastError } from "./errors.js";
import { Match, type MatchOptions } from "./match.js";
import { Credentials, storedSession, type SessionListener, type StoredSession } from "./session.js";

export interface ConnectOptions {
  /** The server's `host:port` (plain HTTP/2, as `dast serve` listens). */
  readonly address: string;
  /** Extra interceptors, outermost first (logging, counting calls, tracing). */
  readonly interceptors?: readonly Interceptor[];
  /** Each unary call's deadline in milliseconds (streams have none). */
  readonly callTimeoutMs?: number;
}

export interface SignInOptions extends ConnectOptions {
  /** Called with the session after the sign-in and after every refresh: store it there. */
  readonly onSession?: SessionListener;
  /** This device's clock (tests pass a wrong one); the session's expiries are read on it. */
  readonly now?: () => number;
}

export interface GuestOptions extends SignInOptions {
  /** 8 to 128 characters the app chose once and keeps with the device secret. */
  readonly deviceId: string;
  /**
   * The secret the device's first sign-in returned (`client.newDeviceSecret`); empty or
   * absent for that first sign-in. Without it a known device is refused
   * (ERROR_REASON_DEVICE_SECRET_INVALID).
   */
  readonly deviceSecret?: string;
  /** A new player's name (a known device keeps its player's). */
  readonly displayName?: string;
}

export interface IdTokenOptions extends SignInOptions {
  /** The ID token the identity provider's SDK gave the app. */
  readonly idToken: string;
  /** The provider's name as the server configures it; empty: the one the token's issuer names. */
  readonly provider?: string;
  /** A new player's name; without it the token's name, else "Player-xxxx". */
  readonly displayName?: string;
}

export interface ResumeOptions extends SignInOptions {
  /** The session the app stored (`onSession`): its refresh token at least. */
  readonly session: StoredSession;
}

/**
 * The HTTP/2 transport to a dast server. The keepalive pings find a dead connection (a phone
 * that changed networks) within half a minute even while a stream waits for the next event;
 * the server accepts pings every 10 s or more.
 */
export function createDastTransport(
  address: string,
  interceptors: readonly Interceptor[] = [],
  callTimeoutMs = 10_000,
): Transport {
  return createGrpcTransport({
    baseUrl: `http://${address}`,
    interceptors: [...interceptors],
    defaultTimeoutMs: callTimeoutMs,
    pingIntervalMs: 20_000,
    pingTimeoutMs: 10_000,
  });
}

/** The clients of one connection, and where the bearer token is put on their calls. */
interface Connection {
  readonly transport: Transport;
  readonly accounts: Client<typeof AccountsService>;
  /** Set once the player is signed in; until then calls go without a token. */
  credentials: Credentials | undefined;
}

function connect(options: SignInOptions): Connection {
  let connection: Connection | undefined = undefined;
  const authorize: Interceptor = (next) => (request) => {
    const credentials = connection?.credentials;
    return credentials === undefined ? next(request) : credentials.authorize(next)(request);
  };
  const transport = createDastTransport(
    options.address,
    [...(options.interceptors ?? []), authorize],
    options.callTimeoutMs,
  );
  connection = { transport, accounts: createClient(AccountsService, transport), credentials: undefined };
  return connection;
}

export class DastClient {
  readonly accounts: Client<typeof AccountsService>;
  readonly lobby: Client<typeof LobbyService>;
  readonly game: Client<typeof GameService>;

  private constructor(
    private readonly credentials: Credentials,
    /** The player's display name (as the sign-in answered; "" after a resume). */
    readonly displayName: string,
    /**
     * The device secret of a guest device's first sign-in: store it with the device id
     * before anything else (it is shown once); undefined otherwise.
     */
    readonly newDeviceSecret: string | undefined,
    transport: Transport,
    accounts: Client<typeof AccountsService>,
  ) {
    this.accounts = accounts;
    this.lobby = createClient(LobbyService, transport);
    this.game = createClient(GameService, transport);
  }

  /**
   * Sign the device in as a guest through AccountsService: the device's first sign-in creates
   * the player and returns its device secret (`newDeviceSecret`); later ones need that secret.
   * The client refreshes its access token by itself (see `session`).
   */
  static async signInGuest(options: GuestOptions): Promise<DastClient> {
    const connection = connect(options);
    const reply = await callOrThrow(() =>
      connection.accounts.signInGuest({
        deviceId: options.deviceId,
        deviceSecret: options.deviceSecret ?? "",
        displayName: options.displayName ?? "",
      }),
    );
    return DastClient.signedIn(connection, options, reply.playerId, reply.tokens, reply.displayName,
      reply.deviceSecret === "" ? undefined : reply.deviceSecret);
  }

  /** Sign in with an identity provider's ID token (the same identity is the same player on any device). */
  static async signInWithIdToken(options: IdTokenOptions): Promise<DastClient> {
    const connection = connect(options);
    const reply = await callOrThrow(() =>
      connection.accounts.signInWithIdToken({
        provider: options.provider ?? "",
        idToken: options.idToken,
        displayName: options.displayName ?? "",
      }),
    );
    return DastClient.signedIn(connection, options, reply.playerId, reply.tokens, reply.displayName, undefined);
  }

  /**
   * Go on with a stored session (an app started again): its access token while it lasts,
   * then the refresh token. A session that ended meanwhile fails the first call that needs a
   * refresh (ERROR_REASON_REFRESH_TOKEN_INVALID or _REUSED): sign in again.
   */
  static resume(options: ResumeOptions): DastClient {
    return DastClient.attached(connect(options), options, options.session, "", undefined);
  }

  private static async signedIn(
    connection: Connection,
    options: SignInOptions,
    playerId: string,
    tokens: SessionTokens | undefined,
    displayName: string,
    newDeviceSecret: string | undefined,
  ): Promise<DastClient> {
    const session = storedSession(playerId, tokens, (options.now ?? Date.now)());
    await options.onSession?.(session);
    return DastClient.attached(connection, options, session, displayName, newDeviceSecret);
  }

  /** The client of `session` over `connection`, whose calls then carry its access token. */
  private static attached(
    connection: Connection,
    options: SignInOptions,
    session: StoredSession,
    displayName: string,
    newDeviceSecret: string | undefined,
  ): DastClient {
    const credentials = new Credentials(connection.accounts, session, options.onSession, options.now ?? Date.now);
    connection.credentials = credentials;
    return new DastClient(credentials, displayName, newDeviceSecret, connection.transport, connection.accounts);
  }

  /** The player's id (the same for the same device, or the same identity). */
  get playerId(): string {
    return this.credentials.session.playerId;
  }

  /** The session as it stands: what the app stores to resume it later. */
  get session(): StoredSession {
    return this.credentials.session;
  }

  /** Access tokens renewed so far. */
  get refreshes(): number {
    return this.credentials.refreshes;
  }

  /** Calls the server refused because their access token had expired (each refreshed and sent again). */
  get refusedAsExpired(): number {
    return this.credentials.refusedAsExpired;
  }

  /** End this session on the server: its tokens stop working on every server. */
  async signOut(): Promise<void> {
    await callOrThrow(() => this.accounts.signOut({}));
  }

  /** Open a table (this player is its host, at seat 0). */
  async createTable(settings: MessageInitShape<typeof TableSettingsSchema>): Promise<Table> {
    return tableOf(await callOrThrow(() => this.lobby.createTable({ settings })));
  }

  /** Sit at a table by id, or at a private one by its invite code; at `seat` or the first free. */
  async joinTable(target: { tableId?: string; inviteCode?: string; seat?: number }): Promise<Table> {
    return tableOf(await callOrThrow(() => this.lobby.joinTable(target)));
  }

  /** The host puts a bot of `level` on the empty `seat`. */
  async addBot(tableId: string, seat: number, level: BotLevel): Promise<Table> {
    return tableOf(await callOrThrow(() => this.lobby.addBot({ tableId, seat, level })));
  }

  /** The host starts the match: bots fill the empty seats; the table then holds `gameId`. */
  async startGame(tableId: string): Promise<Table> {
    return tableOf(await callOrThrow(() => this.lobby.startGame({ tableId })));
  }

  async getTable(target: { tableId?: string; gameId?: string }): Promise<Table> {
    return tableOf(await callOrThrow(() => this.lobby.getTable(target)));
  }

  /**
   * A match this player plays (or watches): by default over one Play stream carrying its
   * events and its commands, resumed by itself, whose access token it renews on the stream.
   */
  match(gameId: string, options: MatchOptions = {}): Match {
    return new Match(this.game, gameId, options, this.credentials);
  }
}

/** A lobby reply's table: the server always sets it. */
function tableOf(reply: { table?: Table }): Table {
  if (reply.table === undefined) throw new Error("the lobby answered without the table");
  return reply.table;
}

/** Runs a call, turning whatever it throws into a DastError. */
export async function callOrThrow<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (thrown) {
    throw DastError.from(thrown);
  }
}
