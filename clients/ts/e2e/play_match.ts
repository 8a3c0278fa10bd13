// The end-to-end run of tests/e2e/test_ts_client.py: the worked example's playMatch() over
// Play streams, signed in with an identity provider's ID token, through a proxy that cuts
// every connection mid-match once the access token has expired (the player thinks past its
// expiry), with the outcome of one command lost on the way (its stream drops just before); then a stored session resumed on a device whose
// clock is an hour behind (its expired access token is refused, refreshed and the call sent
// again), and three refusals provoked to check the typed errors. Prints one JSON line:
// receipts, calls per method, connections, refreshes, the refusals as decoded.
//
//   node dist/e2e/play_match.js --address 127.0.0.1:50051 --game hokm|hand \
//     --id-token JWT --provider NAME --device ID [--cut-after-events 40] \
//     [--lose-reply-of-command 3]
import { parseArgs } from "node:util";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { PlayResponse } from "../src/gen/dast/v1/game_pb.js";
import { DastClient, DastError, ErrorReason, type GameCommand, type StoredSession } from "../src/index.js";
import { sleep } from "../src/retry.js";
import { TABLES, playMatch, winnersOf } from "../examples/play_match.js";
import { CuttableProxy } from "./cuttable_proxy.js";

/** A refused call as the typed error decodes it: the code, the reason enum, RetryInfo. */
interface Refusal {
  readonly code: string;
  readonly reason: string;
  readonly reasonOnTheWire: string;
  readonly retryDelayMs?: number;
}

async function refusalOf(call: () => Promise<unknown>): Promise<Refusal> {
  try {
    await call();
  } catch (thrown) {
    const error = DastError.from(thrown);
    return {
      code: Code[error.code],
      reason: ErrorReason[error.reason],
      reasonOnTheWire: error.reasonName,
      ...(error.retryDelayMs === undefined ? {} : { retryDelayMs: error.retryDelayMs }),
    };
  }
  throw new Error("the call was expected to fail, and succeeded");
}

/** Signs in with one guest device (and its secret) until the server's per-device limit
 * refuses (with RetryInfo). */
function signInPastTheLimit(address: string, deviceId: string): Promise<Refusal> {
  return refusalOf(async () => {
    const first = await DastClient.signInGuest({ address, deviceId });
    const deviceSecret = first.newDeviceSecret;
    for (let attempt = 0; attempt < 1_000; attempt += 1) {
      await DastClient.signInGuest({ address, deviceId, deviceSecret });
    }
  });
}

/** Waits until the session's access token has expired (on this machine's clock). */
async function outlive(session: StoredSession): Promise<void> {
  await sleep(Math.max(0, session.accessExpiresAtMs - Date.now()) + 250);
}

/** A well-formed command of the game; the stale probe is refused before the rules see it. */
const ANY_COMMAND: Record<"hokm" | "hand", GameCommand> = {
  hokm: { case: "hokm", value: { kind: { case: "playCard", value: { card: 0 } } } },
  hand: { case: "hand", value: { kind: { case: "discard", value: { card: 0 } } } },
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      address: { type: "string" },
      game: { type: "string", default: "hokm" },
      device: { type: "string" },
      "id-token": { type: "string" },
      provider: { type: "string", default: "" },
      "cut-after-events": { type: "string", default: "40" },
      "lose-reply-of-command": { type: "string", default: "3" },
    },
  });
  const game = values.game === "hokm" || values.game === "hand" ? values.game : undefined;
  const idToken = values["id-token"];
  if (values.address === undefined || values.device === undefined || game === undefined || idToken === undefined) {
    throw new Error("usage: play_match --address HOST:PORT --game hokm|hand --id-token JWT --device ID");
  }
  const cutAfterEvents = Number(values["cut-after-events"]);
  const loseReplyOfCommand = Number(values["lose-reply-of-command"]);

  // Every call the client makes (each attempt of a resent command too), by method.
  const calls: Record<string, number> = {};
  const countCalls: Interceptor = (next) => (request) => {
    calls[request.method.name] = (calls[request.method.name] ?? 0) + 1;
    return next(request);
  };
  // The server applies one command and its outcome never arrives (the stream drops just
  // before it): the client must open the stream again after the last seq it received and
  // resend the command with the same command id, and the server must not apply it twice.
  let accepted = 0;
  const loseOneOutcome: Interceptor = (next) => async (request) => {
    const response = await next(request);
    if (request.method.name !== "Play" || !response.stream) return response;
    const messages = response.message as AsyncIterable<PlayResponse>;
    async function* losing(): AsyncIterable<PlayResponse> {
      for await (const message of messages) {
        const outcome = message.kind.case === "outcome" ? message.kind.value : undefined;
        if (outcome !== undefined && (outcome.status?.code ?? 0) === 0 && ++accepted === loseReplyOfCommand) {
          throw new ConnectError("the outcome was lost on the way (injected by the test)", Code.Unavailable);
        }
        yield message;
      }
    }
    return { ...response, message: losing() };
  };

  const proxy = await CuttableProxy.start(values.address);
  const refusals: Record<string, Refusal> = {};
  let eventsSeen = 0;
  let sessionsStored = 0;
  let refreshesAtCut = -1;
  let accessLifetimeMs = 0;
  let client: DastClient | undefined;
  try {
    const startedAt = Date.now();
    const record = await playMatch({
      address: proxy.address,
      signIn: async (connection) => {
        client = await DastClient.signInWithIdToken({
          ...connection,
          idToken,
          provider: values.provider,
          onSession: () => {
            sessionsStored += 1;
          },
        });
        accessLifetimeMs = client.session.accessExpiresAtMs - Date.now();
        return client;
      },
      settings: TABLES[game],
      interceptors: [countCalls, loseOneOutcome],
      signal: AbortSignal.timeout(120_000),
      onUpdate: async (update, match) => {
        if (update.kind === "connected" && refusals.staleExpectedSeq === undefined) {
          // A command decided from a state older than the log's is refused: its outcome on
          // the stream carries the status and reason a SubmitCommand call would end with.
          const stateSeq = match.state?.seq ?? 1n;
          refusals.staleExpectedSeq = await refusalOf(() => match.send(ANY_COMMAND[game], stateSeq - 1n));
        }
        if (update.kind === "event" && ++eventsSeen === cutAfterEvents && client !== undefined) {
          // The player thinks past the access token's expiry, then the network goes away
          // mid-match: the stream and every call in flight fail, and the stream opened again
          // carries a refreshed token.
          await outlive(client.session);
          refreshesAtCut = client.refreshes;
          proxy.cut();
        }
      },
    });
    const playedMs = Date.now() - startedAt;
    const player = record.client;
    refusals.noSuchTable = await refusalOf(() => player.getTable({ tableId: "no-such-table" }));

    // The app stops with its session stored; it starts again after the access token expired,
    // on a device whose clock is an hour behind: it believes the token good, the server
    // refuses it as expired, and the client refreshes and sends the call once more.
    const stored = player.session;
    await outlive(stored);
    const resumedCalls: Record<string, number> = {};
    const countResumed: Interceptor = (next) => (request) => {
      resumedCalls[request.method.name] = (resumedCalls[request.method.name] ?? 0) + 1;
      return next(request);
    };
    const resumed = DastClient.resume({
      address: values.address,
      session: stored,
      now: () => Date.now() - 3_600_000,
      interceptors: [countResumed],
    });
    const table = await resumed.getTable({ gameId: record.gameId });
    const afterExpiry = {
      calls: resumedCalls,
      refusedAsExpired: resumed.refusedAsExpired,
      tableGameId: table.gameId,
      samePlayer: resumed.playerId === player.playerId,
      refreshed: resumed.session.refreshToken !== stored.refreshToken,
    };
    refusals.signInsOverTheLimit = await signInPastTheLimit(values.address, `${values.device}-limit`);

    const { match } = record;
    const summary = {
      gameId: record.gameId,
      receipts: record.receipts.map(([seq, hash]) => [Number(seq), Buffer.from(hash).toString("base64")]),
      calls,
      connections: match.connections,
      cuts: proxy.cuts,
      resumedAfter: record.resumedAfter.map(Number),
      moves: record.moves,
      stale: record.stale,
      duplicates: record.duplicates,
      resends: match.resends,
      renewals: match.renewals,
      deadStreams: match.deadStreams,
      refusals,
      nextToAct: match.state?.turn?.nextToAct ?? null,
      winners: winnersOf(record.lastEvent),
      clockOffsetMs: match.clockOffsetMs,
      playerId: record.client.playerId,
      refreshes: record.client.refreshes,
      refreshesAtCut,
      sessionsStored,
      accessLifetimeMs,
      playedMs,
      afterExpiry,
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } finally {
    await proxy.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
