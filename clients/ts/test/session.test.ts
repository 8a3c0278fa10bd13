// Credentials against an in-memory accounts service, lobby and game whose tokens expire on a
// clock the test moves: refreshing before expiry, one refresh for many calls, the session
// handed to the app before its token is used, a call refused as expired refreshed and sent
// again, a stream so refused opened again after the last seq, a session that ended.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { AccountsService, SessionTokensSchema } from "../src/gen/dast/v1/accounts_pb.js";
import { GameService } from "../src/gen/dast/v1/game_pb.js";
import { LobbyService } from "../src/gen/dast/v1/lobby_pb.js";
import { ErrorInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import { DAST_ERROR_DOMAIN, DastError, ErrorReason } from "../src/errors.js";
import { Match, type MatchUpdate } from "../src/match.js";
import { Credentials, storedSession, type StoredSession } from "../src/session.js";

const LIFETIME_MS = 90_000;
const LAST_SEQ = 6n;

function refusal(code: Code, reason: string): ConnectError {
  return new ConnectError(reason, code, undefined, [
    { desc: ErrorInfoSchema, value: { reason, domain: DAST_ERROR_DOMAIN } },
  ]);
}

/** The server's side: which access tokens it still takes, what each call carried. */
interface FakeServer {
  /** The server's clock, and this device's (the test moves both). */
  now: number;
  /** The access token the server accepts (the newest); older ones are "expired". */
  valid: string;
  /** The refresh token the next Refresh must carry. */
  refreshToken: string;
  issued: number;
  /** `Method:authorization` of every call, in order. */
  readonly seen: string[];
  /** When set, Refresh refuses with this. */
  refreshRefusal: ConnectError | undefined;
  /** Subscribe streams opened: the after_seq of each. */
  readonly subscribedAfter: bigint[];
}

function tokensAt(server: FakeServer): { accessToken: string; refreshToken: string } {
  server.issued += 1;
  server.valid = `access-${server.issued}`;
  server.refreshToken = `refresh-${server.issued}`;
  return { accessToken: server.valid, refreshToken: server.refreshToken };
}

function sessionTokens(server: FakeServer) {
  const { accessToken, refreshToken } = tokensAt(server);
  return {
    accessToken,
    refreshToken,
    sessionId: "session-1",
    accessExpiresAtMs: BigInt(server.now + LIFETIME_MS),
    refreshExpiresAtMs: BigInt(server.now + 30 * 86_400_000),
    serverTimeMs: BigInt(server.now),
  };
}

function fakeServer(): {
  server: FakeServer;
  credentials: Credentials;
  lobby: ReturnType<typeof createClient<typeof LobbyService>>;
  game: ReturnType<typeof createClient<typeof GameService>>;
  stored: StoredSession[];
} {
  const server: FakeServer = {
    now: 1_000_000, valid: "", refreshToken: "", issued: 0, seen: [], refreshRefusal: undefined,
    subscribedAfter: [],
  };
  const stored: StoredSession[] = [];
  const authorized = (method: string, context: HandlerContext): void => {
    const header = context.requestHeader.get("authorization") ?? "";
    server.seen.push(`${method}:${header}`);
    if (header !== `Bearer ${server.valid}`) throw refusal(Code.Unauthenticated, "ERROR_REASON_TOKEN_EXPIRED");
  };
  let credentials: Credentials | undefined = undefined;
  const transport = createRouterTransport(
    ({ service }) => {
      service(AccountsService, {
        refresh(request, context) {
          server.seen.push(`Refresh:${context.requestHeader.get("authorization") ?? ""}`);
          if (server.refreshRefusal !== undefined) throw server.refreshRefusal;
          assert.equal(request.refreshToken, server.refreshToken, "the newest refresh token is spent");
          return { playerId: "a-1", tokens: sessionTokens(server) };
        },
      });
      service(LobbyService, {
        getTable(request, context) {
          authorized("GetTable", context);
          return { table: { tableId: request.tableId } };
        },
      });
      service(GameService, {
        async *subscribe(request, context) {
          server.subscribedAfter.push(request.afterSeq);
          authorized("Subscribe", context);
          for (let seq = request.afterSeq + 1n; seq <= LAST_SEQ; seq += 1n) {
            // The token expires mid-stream after event 3 of the first stream (the server
            // ends open streams only on revocation; here the test's server does on expiry).
            if (seq === 4n && server.subscribedAfter.length === 1) {
              server.valid = "";
              throw refusal(Code.Unauthenticated, "ERROR_REASON_TOKEN_EXPIRED");
            }
            yield { event: { seq }, hash: new Uint8Array([Number(seq)]), turn: { nextToAct: [1] } };
          }
        },
        getView(_request, context) {
          authorized("GetView", context);
          return { seq: 1n, turn: { nextToAct: [1] } };
        },
      });
    },
    { transport: { interceptors: [(next) => (request) => credentials?.authorize(next)(request) ?? next(request)] } },
  );
  const accounts = createClient(AccountsService, transport);
  const first = storedSession("a-1", create(SessionTokensSchema, sessionTokens(server)), server.now);
  credentials = new Credentials(accounts, first, (session) => {
    stored.push(session);
  }, () => server.now);
  return { server, credentials, lobby: createClient(LobbyService, transport), game: createClient(GameService, transport), stored };
}

test("the access token is refreshed before it expires, and the new session stored first", async () => {
  const { server, credentials, lobby, stored } = fakeServer();
  await lobby.getTable({ tableId: "t" });
  server.now += LIFETIME_MS - 31_000; // more than a third of the lifetime left: no refresh
  await lobby.getTable({ tableId: "t" });
  assert.equal(credentials.refreshes, 0);
  server.now += 2_000; // within the last third: refresh first
  await lobby.getTable({ tableId: "t" });
  assert.equal(credentials.refreshes, 1);
  assert.deepEqual(stored.map((session) => session.refreshToken), ["refresh-2"]);
  assert.deepEqual(server.seen, [
    "GetTable:Bearer access-1", "GetTable:Bearer access-1", "Refresh:", "GetTable:Bearer access-2",
  ]);
  assert.equal(credentials.session.accessExpiresAtMs, server.now + LIFETIME_MS);
});

test("calls that find the token due share one refresh", async () => {
  const { server, credentials, lobby } = fakeServer();
  server.now += LIFETIME_MS;
  await Promise.all(Array.from({ length: 5 }, () => lobby.getTable({ tableId: "t" })));
  assert.equal(credentials.refreshes, 1);
  assert.equal(server.seen.filter((call) => call.startsWith("Refresh")).length, 1);
});

test("a call refused as expired is refreshed and sent once more", async () => {
  const { server, credentials, lobby } = fakeServer();
  server.valid = "revoked-by-the-clock"; // the device believes its token good; the server does not
  const reply = await lobby.getTable({ tableId: "t" });
  assert.equal(reply.table?.tableId, "t");
  assert.equal(credentials.refusedAsExpired, 1);
  assert.deepEqual(server.seen, ["GetTable:Bearer access-1", "Refresh:", "GetTable:Bearer access-2"]);
});

test("a session that ended fails the call with its reason, without looping", async () => {
  const { server, lobby } = fakeServer();
  server.refreshRefusal = refusal(Code.Unauthenticated, "ERROR_REASON_REFRESH_TOKEN_REUSED");
  server.now += LIFETIME_MS;
  await assert.rejects(lobby.getTable({ tableId: "t" }), (thrown: unknown) => {
    assert.equal(DastError.from(thrown).reason, ErrorReason.REFRESH_TOKEN_REUSED);
    return true;
  });
  assert.deepEqual(server.seen, ["Refresh:"]);
});

test("a stream refused as expired opens again on a refreshed token after the last seq", async () => {
  const { server, credentials, game } = fakeServer();
  const match = new Match(game, "game-1", { backoff: { initialMs: 1, maxMs: 2, maxAttempts: 4 }, via: "unary" });
  const updates: MatchUpdate[] = [];
  for await (const update of match.updates()) updates.push(update);
  const seqs = updates.flatMap((update) => (update.kind === "event" ? [update.event.seq] : []));
  assert.deepEqual(seqs, [1n, 2n, 3n, 4n, 5n, 6n]);
  assert.deepEqual(server.subscribedAfter, [0n, 3n]);
  assert.equal(credentials.refreshes, 1);
  assert.equal(credentials.refusedAsExpired, 1);
  assert.ok(server.seen.includes("Subscribe:Bearer access-2"));
});
