// A signed-in guest: the lobby and game clients over one gRPC (HTTP/2) transport, every
// call carrying the guest's bearer token, and the lobby calls an app makes to reach a match.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { GameService } from "./gen/dast/v1/game_pb.js";
import {
  LobbyService,
  type BotLevel,
  type Table,
  type TableSettingsSchema,
} from "./gen/dast/v1/lobby_pb.js";
import { DastError } from "./errors.js";
import { Match, type MatchOptions } from "./match.js";

export interface ConnectOptions {
  /** The server's `host:port` (plain HTTP/2, as `dast serve` listens). */
  readonly address: string;
  /** Extra interceptors, outermost first (logging, counting calls, tracing). */
  readonly interceptors?: readonly Interceptor[];
  /** Each unary call's deadline in milliseconds (streams have none). */
  readonly callTimeoutMs?: number;
}

export interface GuestOptions extends ConnectOptions {
  /** 8 to 128 characters the app chose once and keeps: the same device is the same player. */
  readonly deviceId: string;
  readonly displayName?: string;
}

/** Sign in again this long before the token expires, so that no call goes out with a dead one. */
const TOKEN_REFRESH_MARGIN_MS = 60_000;

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

export class DastClient {
  readonly lobby: Client<typeof LobbyService>;
  readonly game: Client<typeof GameService>;
  private signIn: Promise<void> | undefined;

  private constructor(
    private readonly options: GuestOptions,
    private token: string,
    private expiresAtMs: number,
    /** The guest's player id (the same for the same device id). */
    readonly playerId: string,
    readonly displayName: string,
    transport: Transport,
  ) {
    this.lobby = createClient(LobbyService, transport);
    this.game = createClient(GameService, transport);
  }

  /**
   * Sign in as the guest of `deviceId` and return a client whose every call carries its token.
   * The token is renewed (the same device id, so the same player) shortly before it expires.
   */
  static async signInGuest(options: GuestOptions): Promise<DastClient> {
    let client: DastClient | undefined;
    const authorize: Interceptor = (next) => async (request) => {
      if (client !== undefined && request.method.name !== "SignInGuest") {
        request.header.set("authorization", `Bearer ${await client.currentToken()}`);
      }
      return next(request);
    };
    const transport = createDastTransport(
      options.address,
      [...(options.interceptors ?? []), authorize],
      options.callTimeoutMs,
    );
    const lobby = createClient(LobbyService, transport);
    const reply = await callOrThrow(() =>
      lobby.signInGuest({ deviceId: options.deviceId, displayName: options.displayName ?? "" }),
    );
    client = new DastClient(
      options,
      reply.token,
      Number(reply.expiresAtMs),
      reply.playerId,
      reply.displayName,
      transport,
    );
    return client;
  }

  /** Open a table (this guest is its host, at seat 0). */
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

  /** A match this guest plays (or watches): its resumable event stream and its commands. */
  match(gameId: string, options: MatchOptions = {}): Match {
    return new Match(this.game, gameId, options);
  }

  private async currentToken(): Promise<string> {
    if (Date.now() > this.expiresAtMs - TOKEN_REFRESH_MARGIN_MS) {
      // One renewal for all the calls that notice at once.
      this.signIn ??= this.renew().finally(() => {
        this.signIn = undefined;
      });
      await this.signIn;
    }
    return this.token;
  }

  private async renew(): Promise<void> {
    const reply = await callOrThrow(() =>
      this.lobby.signInGuest({
        deviceId: this.options.deviceId,
        displayName: this.options.displayName ?? "",
      }),
    );
    this.token = reply.token;
    this.expiresAtMs = Number(reply.expiresAtMs);
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
