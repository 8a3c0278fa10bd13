// A signed-in player's session (AccountsService, docs/accounts.md "Sessions"): the access
// token every call carries, renewed with the refresh token before it expires, and once more
// when the server answers that it has (UNAUTHENTICATED, ERROR_REASON_TOKEN_EXPIRED).
import type { Client, Interceptor } from "@connectrpc/connect";
import { AccountsService, type SessionTokens } from "./gen/dast/v1/accounts_pb.js";
import { DastError, ErrorReason } from "./errors.js";

/**
 * What an app keeps of a session (in the platform's secure storage), as `onSession` hands
 * it over after every sign-in and refresh. The times are this device's clock, converted from
 * the server's with the reply's `server_time_ms`, so a device whose clock is off still
 * refreshes in time.
 */
export interface StoredSession {
  readonly playerId: string;
  readonly sessionId: string;
  /** The bearer token of every call; short-lived. */
  readonly accessToken: string;
  readonly accessExpiresAtMs: number;
  /** Spent by the next refresh: only the newest one works, and a spent one ends the session. */
  readonly refreshToken: string;
  readonly refreshExpiresAtMs: number;
}

/**
 * Called with the new session after every sign-in and refresh, and awaited before its access
 * token is used: store the refresh token there (a refresh token works once; losing the
 * newest means signing in again).
 */
export type SessionListener = (session: StoredSession) => void | Promise<void>;

/** Refresh this long before the access token expires (at most: a third of its lifetime). */
export const REFRESH_MARGIN_MS = 60_000;

/** The AccountsService methods that take no bearer token: a token sent to SignInGuest
 * would ask the server to move a lobby guest over (docs/accounts.md). */
const OPEN_ACCOUNTS_METHODS: ReadonlySet<string> = new Set(["SignInGuest", "SignInWithIdToken", "Refresh"]);

/** The session of `tokens` as stored, with its expiries on the clock `now` reads. */
export function storedSession(playerId: string, tokens: SessionTokens | undefined, now: number): StoredSession {
  if (tokens === undefined) throw new Error("the accounts service answered without the session's tokens");
  // The server's expiries, moved to this device's clock by the server's "now" in the reply.
  const offset = now - Number(tokens.serverTimeMs);
  return {
    playerId,
    sessionId: tokens.sessionId,
    accessToken: tokens.accessToken,
    accessExpiresAtMs: Number(tokens.accessExpiresAtMs) + offset,
    refreshToken: tokens.refreshToken,
    refreshExpiresAtMs: Number(tokens.refreshExpiresAtMs) + offset,
  };
}

export class Credentials {
  /** Refreshes made so far. */
  refreshes = 0;
  /** Access tokens the server refused as expired (this device's clock was off, or it slept). */
  refusedAsExpired = 0;
  private refreshing: Promise<void> | undefined;
  /** When the current access token is renewed: before its expiry by the margin. */
  private renewAtMs: number;

  constructor(
    private readonly accounts: Client<typeof AccountsService>,
    private current: StoredSession,
    private readonly onSession: SessionListener | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.renewAtMs = renewalTime(current, now());
  }

  /** The session as it stands (the newest refresh token). */
  get session(): StoredSession {
    return this.current;
  }

  /** The access token to send now: refreshed first when it expires soon. */
  async accessToken(): Promise<string> {
    if (this.now() >= this.renewAtMs) await this.refresh();
    return this.current.accessToken;
  }

  /** Milliseconds until the access token is due for renewal (0: now). */
  msUntilRenewal(): number {
    return Math.max(0, this.renewAtMs - this.now());
  }

  /**
   * The server refused `token` as expired (this device's clock was off, or the device slept):
   * refresh unless another call refreshed meanwhile.
   */
  async expired(token: string): Promise<void> {
    this.refusedAsExpired += 1;
    if (this.current.accessToken === token) await this.refresh();
  }

  /**
   * Spend the refresh token for the session's next tokens; one refresh at a time, shared by
   * every call that needs it (two refreshes of one token would end the session). Throws the
   * server's refusal (read it with DastError.from) when the session is over
   * (ERROR_REASON_REFRESH_TOKEN_INVALID or _REUSED): sign in again.
   */
  refresh(): Promise<void> {
    this.refreshing ??= this.renew().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async renew(): Promise<void> {
    // The refusal goes on as the ConnectError it is, so that the call this refresh was for
    // fails with the refusal's code and details.
    const reply = await this.accounts.refresh({ refreshToken: this.current.refreshToken });
    const next = storedSession(reply.playerId, reply.tokens, this.now());
    await this.onSession?.(next);
    this.current = next;
    this.renewAtMs = renewalTime(next, this.now());
    this.refreshes += 1;
  }

  /**
   * The interceptor putting the access token on every call but the open sign-ins: a unary
   * call refused with ERROR_REASON_TOKEN_EXPIRED is refreshed and sent once more; a stream
   * so refused marks the token expired, so that the stream opened again (Match does) carries
   * a fresh one.
   */
  readonly authorize: Interceptor = (next) => async (request) => {
    if (request.service.typeName === AccountsService.typeName && OPEN_ACCOUNTS_METHODS.has(request.method.name)) {
      return next(request);
    }
    const token = await this.accessToken();
    request.header.set("authorization", `Bearer ${token}`);
    try {
      const response = await next(request);
      if (!response.stream) return response;
      return { ...response, message: this.watchExpiry(response.message, token) };
    } catch (thrown) {
      if (!isTokenExpired(thrown)) throw thrown;
      await this.expired(token);
      if (request.stream) throw thrown;
      request.header.set("authorization", `Bearer ${await this.accessToken()}`);
      return next(request);
    }
  };

  private async *watchExpiry<T>(messages: AsyncIterable<T>, token: string): AsyncIterable<T> {
    try {
      yield* messages;
    } catch (thrown) {
      if (isTokenExpired(thrown)) await this.expired(token).catch(() => undefined);
      throw thrown;
    }
  }
}

/** Whether a failed call was refused because its access token has expired. */
export function isTokenExpired(thrown: unknown): boolean {
  return DastError.from(thrown).reason === ErrorReason.TOKEN_EXPIRED;
}

function renewalTime(session: StoredSession, now: number): number {
  const lifetime = Math.max(0, session.accessExpiresAtMs - now);
  return session.accessExpiresAtMs - Math.min(REFRESH_MARGIN_MS, lifetime / 3);
}
