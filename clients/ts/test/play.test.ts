// Match over Play against an in-memory GameService whose streams fail on cue: a stream cut
// mid-command (the command applied once, its outcome arriving on the next stream, no event
// missed or repeated), a refusal worth a retry sent again on the same stream, a silent
// stream opened again, the access token renewed on the stream, refusals as DastErrors.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { Channel } from "../src/channel.js";
import { GameService, type PlayCommand, type PlayResponseSchema } from "../src/gen/dast/v1/game_pb.js";
import { HokmCommandSchema } from "../src/gen/dast/v1/hokm_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import type { StatusSchema } from "../src/gen/google/rpc/status_pb.js";
import { DAST_ERROR_DOMAIN, DastError, ErrorReason } from "../src/errors.js";
import { Match, type MatchUpdate, type StreamAuth } from "../src/match.js";

const LAST_SEQ = 9n;
const FAST = { initialMs: 1, maxMs: 2, maxAttempts: 4 };
const PLAY_ACE = { case: "hokm" as const, value: create(HokmCommandSchema, { kind: { case: "playCard", value: { card: 12 } } }) };
type Response = MessageInitShape<typeof PlayResponseSchema>;

/** How the i-th stream misbehaves. */
interface StreamPlan {
  /** Applies the n-th command it reads (1-based), sends its events, then fails before its outcome. */
  readonly cutAfterApplying?: number;
  /** Refuses the n-th command it reads with UNAVAILABLE store_unavailable and RetryInfo. */
  readonly storeAwayFor?: number;
  /** Sends nothing at all, not even a heartbeat (a dead path the client must notice). */
  readonly silent?: boolean;
}

interface FakeGame {
  /** The log: one entry per seq (1-based), the command id that appended it or "". */
  readonly log: string[];
  readonly openedAfter: bigint[];
  /** Every command each stream read, by stream. */
  readonly commandsRead: PlayCommand[][];
  readonly renewals: string[];
  getViews: number;
}

/**
 * A Hokm match in which seat 0 acts at every odd seq: a command appends two events (the
 * seat's card, then the next seat's, after which it is seat 0's turn again) until LAST_SEQ.
 * A command id applied before is answered `duplicate` with its first seqs; a stale
 * expected_seq is refused ABORTED.
 */
function fakeGame(plans: StreamPlan[]): { match: (auth?: StreamAuth) => Match; game: FakeGame } {
  const game: FakeGame = { log: ["", "start"], openedAfter: [], commandsRead: [], renewals: [], getViews: 0 };
  const changed = new Set<() => void>();
  const eventMessage = (seq: bigint): Response => {
    const yourTurn = seq % 2n === 1n && seq < LAST_SEQ;
    return {
      kind: {
        case: "event",
        value: {
          event: { seq },
          hash: new Uint8Array([Number(seq)]),
          turn: seq === LAST_SEQ ? { nextToAct: [] } : { nextToAct: [yourTurn ? 0 : 1], yourTurn },
          view: yourTurn ? { case: "hokm", value: { seat: 0 } } : { case: undefined },
        },
      },
    };
  };
  const apply = (command: PlayCommand): Response => {
    const first = game.log.indexOf(command.commandId);
    if (first > 0) {
      return { kind: { case: "outcome", value: { commandId: command.commandId, status: { code: 0 }, duplicate: true, firstSeq: BigInt(first), lastSeq: BigInt(first + 1) } } };
    }
    if (command.expectedSeq !== BigInt(game.log.length - 1)) {
      return { kind: { case: "outcome", value: { commandId: command.commandId, status: refusal(Code.Aborted, "ERROR_REASON_STALE_EXPECTED_SEQ") } } };
    }
    game.log.push(command.commandId, command.commandId);
    for (const wake of changed) wake();
    const lastSeq = BigInt(game.log.length - 1);
    return { kind: { case: "outcome", value: { commandId: command.commandId, status: { code: 0 }, firstSeq: lastSeq - 1n, lastSeq } } };
  };
  const transport = createRouterTransport(({ service }) => {
    service(GameService, {
      async *play(requests) {
        const plan = plans[game.openedAfter.length] ?? {};
        const read: PlayCommand[] = [];
        game.commandsRead.push(read);
        const incoming = requests[Symbol.asyncIterator]();
        const opening = (await incoming.next()).value;
        if (opening?.kind.case !== "open") throw new ConnectError("open first", Code.InvalidArgument);
        game.openedAfter.push(opening.kind.value.afterSeq);
        if (plan.silent) {
          for await (const _ of { [Symbol.asyncIterator]: () => incoming }) void _;
          return;
        }
        const out = new Channel<Response>();
        let sent = opening.kind.value.afterSeq;
        const flush = (): void => {
          while (sent < BigInt(game.log.length - 1)) {
            sent += 1n;
            out.push(eventMessage(sent));
          }
        };
        changed.add(flush);
        flush();
        if (sent === LAST_SEQ) out.close(); // the match was over already
        void (async () => {
          for (let next = await incoming.next(); next.done !== true; next = await incoming.next()) {
            const kind = next.value.kind;
            if (kind.case === "renewal") {
              game.renewals.push(kind.value.accessToken);
              out.push({ kind: { case: "renewed", value: { expiresMs: 1n } } });
            } else if (kind.case === "command") {
              read.push(kind.value);
              if (plan.storeAwayFor === read.length) {
                out.push({ kind: { case: "outcome", value: { commandId: kind.value.commandId, status: refusal(Code.Unavailable, "ERROR_REASON_STORE_UNAVAILABLE", true) } } });
                continue;
              }
              const outcome = apply(kind.value);
              if (plan.cutAfterApplying === read.length) {
                out.fail(new ConnectError("connection reset", Code.Unavailable));
                return;
              }
              out.push(outcome);
              if (sent === LAST_SEQ) out.close(); // the final event, then its command's outcome
            }
          }
        })().catch((error: unknown) => out.fail(error));
        try {
          yield* out;
        } finally {
          changed.delete(flush);
        }
      },
      getView() {
        game.getViews += 1;
        const seq = BigInt(game.log.length - 1);
        const yourTurn = seq % 2n === 1n && seq < LAST_SEQ;
        return { seq, turn: { nextToAct: yourTurn ? [0] : [], yourTurn }, view: { case: "hokm", value: { seat: 0 } } };
      },
    });
  });
  const client = createClient(GameService, transport);
  return {
    match: (auth) => new Match(client, "game-1", { backoff: FAST, silenceMs: 200 }, auth),
    game,
  };
}

function refusal(code: Code, reason: string, retry = false): MessageInitShape<typeof StatusSchema> {
  const details = [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason, domain: DAST_ERROR_DOMAIN }))];
  if (retry) details.push(anyPack(RetryInfoSchema, create(RetryInfoSchema, { retryDelay: { nanos: 5_000_000 } })));
  return { code, message: reason, details };
}

/** Plays the whole match: the first move whenever it is the seat's turn. */
async function playAll(match: Match): Promise<{ seqs: bigint[]; outcomes: { duplicate: boolean; lastSeq: bigint }[] }> {
  const seqs: bigint[] = [];
  const outcomes: { duplicate: boolean; lastSeq: bigint }[] = [];
  for await (const update of match.updates()) {
    if (update.kind === "event") seqs.push(update.event.seq);
    for (let move = match.moveToMake; move !== undefined; move = match.moveToMake) {
      const outcome = await match.act(move, PLAY_ACE);
      assert.ok(outcome.applied, "no refusal expected here");
      outcomes.push({ duplicate: outcome.duplicate, lastSeq: outcome.lastSeq });
    }
  }
  return { seqs, outcomes };
}

const EVERY_SEQ = [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n];

test("a match over Play: every event once, each move's outcome after its events", async () => {
  const { match: open, game } = fakeGame([]);
  const match = open();
  const { seqs, outcomes } = await playAll(match);
  assert.deepEqual(seqs, EVERY_SEQ);
  assert.deepEqual(outcomes.map((outcome) => outcome.lastSeq), [3n, 5n, 7n, 9n]);
  assert.equal(game.openedAfter.length, 1);
  assert.equal(game.getViews, 1, "one GetView per stream, none per event");
  assert.equal(match.resends, 0);
});

test("a stream cut mid-command: the command applied once, its outcome arrives, no event missed or repeated", async () => {
  const { match: open, game } = fakeGame([{ cutAfterApplying: 2 }]);
  const match = open();
  const { seqs, outcomes } = await playAll(match);
  assert.deepEqual(seqs, EVERY_SEQ, "every event once, in order, across the cut");
  // The second command was applied on the first stream, its outcome lost with the stream;
  // resent with the same id on the next, it is answered as a duplicate with its own seqs.
  assert.deepEqual(outcomes, [
    { duplicate: false, lastSeq: 3n },
    { duplicate: true, lastSeq: 5n },
    { duplicate: false, lastSeq: 7n },
    { duplicate: false, lastSeq: 9n },
  ]);
  const cutCommand = game.commandsRead[0]?.[1]?.commandId;
  assert.ok(cutCommand !== undefined);
  assert.equal(game.commandsRead[1]?.[0]?.commandId, cutCommand, "resent first on the new stream, same id");
  assert.equal(game.log.filter((id) => id === cutCommand).length, 2, "applied once: its two events");
  assert.equal(game.openedAfter[1], 5n, "the new stream resumes after the last seq received");
  assert.equal(match.resends, 1);
  assert.equal(game.getViews, 2);
});

test("a command refused while the store is away is sent again on the same stream and applied once", async () => {
  const { match: open, game } = fakeGame([{ storeAwayFor: 1 }]);
  const match = open();
  const { seqs, outcomes } = await playAll(match);
  assert.deepEqual(seqs, EVERY_SEQ);
  assert.equal(outcomes.length, 4);
  assert.equal(game.openedAfter.length, 1, "a refusal never ends the stream");
  const [refused, resent] = game.commandsRead[0] ?? [];
  assert.equal(resent?.commandId, refused?.commandId);
  assert.equal(match.resends, 1);
});

test("a stream that says nothing is taken for dead and opened again after the last seq", async () => {
  const { match: open, game } = fakeGame([{ silent: true }]);
  const match = open();
  const { seqs } = await playAll(match);
  assert.deepEqual(seqs, EVERY_SEQ);
  assert.deepEqual(game.openedAfter, [0n, 0n]);
  assert.equal(match.deadStreams, 1);
});

test("the access token is renewed on the stream when it is due", async () => {
  const { match: open, game } = fakeGame([]);
  let token = "token-1";
  let due = 0;
  const auth: StreamAuth = {
    accessToken: () => {
      if (due === 0 && token === "token-1") token = "token-2"; // the session refreshes once
      due = 60_000;
      return Promise.resolve(token);
    },
    msUntilRenewal: () => due,
  };
  const match = open(auth);
  const updates = match.updates();
  assert.equal((await updates.next()).value?.kind, "connected");
  // The stream opened with token-2 (refreshed first); nothing is due for a minute.
  for (let wait = 0; wait < 20 && game.renewals.length === 0; wait += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(game.renewals, []);
  await updates.return(undefined);

  // A session due for renewal while the stream is open: the fresh token goes on the stream.
  let calls = 0;
  const dueSoon: StreamAuth = {
    accessToken: () => Promise.resolve(`fresh-${calls++ === 0 ? "opening" : "renewed"}`),
    msUntilRenewal: () => (calls <= 1 ? 0 : 60_000),
  };
  const renewed = fakeGame([]);
  const second = renewed.match(dueSoon);
  const stream = second.updates();
  await stream.next();
  for (let wait = 0; wait < 100 && renewed.game.renewals.length === 0; wait += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(renewed.game.renewals, ["fresh-renewed"]);
  assert.equal(second.renewals, 1);
  await stream.return(undefined);
});

test("a stale move comes back as not applied; other refusals as DastErrors", async () => {
  const { match: open } = fakeGame([]);
  const match = open();
  const updates = match.updates();
  const seen: MatchUpdate[] = [];
  seen.push((await updates.next()).value as MatchUpdate);
  const move = match.moveToMake;
  assert.ok(move !== undefined);
  const stale = await match.act({ ...move, seq: move.seq - 1n }, PLAY_ACE);
  assert.ok(!stale.applied && stale.error.reason === ErrorReason.STALE_EXPECTED_SEQ);
  await assert.rejects(match.send(PLAY_ACE, 0n), (error: unknown) => error instanceof DastError && error.code === Code.Aborted);
  await updates.return(undefined);
  // Without the stream, a command has nowhere to go.
  await assert.rejects(match.send(PLAY_ACE, 1n), /read match.updates\(\) first/);
});
