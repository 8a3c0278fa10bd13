// Match against an in-memory GameService whose streams and calls fail on cue: resumption
// with after_seq, one GetView per connection, the stream's contract, resent commands.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { GameService, type SubmitCommandRequest } from "../src/gen/dast/v1/game_pb.js";
import { HokmCommandSchema } from "../src/gen/dast/v1/hokm_pb.js";
import { ErrorInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import { DAST_ERROR_DOMAIN, DastError, ErrorReason, StreamContractError } from "../src/errors.js";
import { Match, type MatchUpdate } from "../src/match.js";

const LAST_SEQ = 10n;
const FAST = { initialMs: 1, maxMs: 2, maxAttempts: 4 };
const PLAY_ACE = { case: "hokm" as const, value: create(HokmCommandSchema, { kind: { case: "playCard", value: { card: 12 } } }) };

interface FakeGame {
  readonly subscribedAfter: bigint[];
  getViews: number;
  readonly commands: SubmitCommandRequest[];
}

/**
 * A game of LAST_SEQ events in which seat 0 is to act after every event. `streams[i]` says
 * how the i-th Subscribe ends: after sending events up to that seq it fails with that
 * error (none: it runs to the end). `commandFailures` fail the first SubmitCommands.
 */
function fakeGame(
  streams: { failAfter?: bigint; error?: ConnectError; skip?: bigint }[],
  commandFailures: ConnectError[] = [],
  viewFailures: ConnectError[] = [],
): { match: (options?: { afterSeq?: bigint }) => Match; game: FakeGame } {
  const game: FakeGame = { subscribedAfter: [], getViews: 0, commands: [] };
  const transport = createRouterTransport(({ service }) => {
    service(GameService, {
      async *subscribe(request) {
        const plan = streams[game.subscribedAfter.length] ?? {};
        game.subscribedAfter.push(request.afterSeq);
        for (let seq = request.afterSeq + 1n; seq <= LAST_SEQ; seq += 1n) {
          if (plan.failAfter !== undefined && seq > plan.failAfter) {
            throw plan.error ?? new ConnectError("connection reset", Code.Aborted);
          }
          if (seq === plan.skip) continue;
          const turn = seq === LAST_SEQ ? { nextToAct: [] } : { nextToAct: [0], yourTurn: true };
          const view = seq === LAST_SEQ ? { case: undefined } : { case: "hokm" as const, value: { seat: 0 } };
          yield { event: { seq }, hash: new Uint8Array([Number(seq)]), turn, view };
        }
      },
      getView() {
        game.getViews += 1;
        const failure = viewFailures.shift();
        if (failure !== undefined) throw failure;
        return { seq: 1n, turn: { nextToAct: [0], yourTurn: true }, view: { case: "hokm", value: { seat: 0 } } };
      },
      submitCommand(request) {
        game.commands.push(request);
        const failure = commandFailures.shift();
        if (failure !== undefined) throw failure;
        return { seq: (request.expectedSeq ?? 0n) + 1n, turn: { nextToAct: [1] }, view: { case: "hokm", value: {} } };
      },
    });
  });
  const client = createClient(GameService, transport);
  return { match: (options = {}) => new Match(client, "game-1", { backoff: FAST, via: "unary", ...options }), game };
}

async function collect(match: Match): Promise<MatchUpdate[]> {
  const updates: MatchUpdate[] = [];
  for await (const update of match.updates()) updates.push(update);
  return updates;
}

/** The seq of the state the seat is to act from, if any (read afresh at each call). */
function pendingMoveSeq(match: Match): bigint | undefined {
  return match.moveToMake?.seq;
}

function seqs(updates: MatchUpdate[]): bigint[] {
  return updates.flatMap((update) => (update.kind === "event" ? [update.event.seq] : []));
}

test("the stream resumes after each drop from the last seq received, every event once", async () => {
  const { match, game } = fakeGame([{ failAfter: 3n }, { failAfter: 7n }]);
  const updates = await collect(match());
  assert.deepEqual(seqs(updates), [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
  assert.deepEqual(game.subscribedAfter, [0n, 3n, 7n]);
  assert.equal(game.getViews, 3, "one GetView per (re)connection, none per event");
  const connected = updates.filter((update) => update.kind === "connected");
  assert.deepEqual(
    connected.map((update) => update.kind === "connected" && [update.afterSeq, update.reconnection]),
    [[0n, false], [3n, true], [7n, true]],
  );
});

test("a view that fails while the stream fails too is retried, nothing left unhandled", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };
  process.on("unhandledRejection", onUnhandled);
  try {
    const reset = new ConnectError("connection reset", Code.Aborted);
    const down = { failAfter: 0n, error: new ConnectError("down", Code.Unavailable) };
    const { match, game } = fakeGame([down, down], [], [reset, reset]);
    const updates = await collect(match());
    assert.deepEqual(seqs(updates), [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
    assert.equal(game.getViews, 3);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("a match followed before resumes after the seq kept on the device", async () => {
  const { match, game } = fakeGame([]);
  const updates = await collect(match({ afterSeq: 6n }));
  assert.deepEqual(seqs(updates), [7n, 8n, 9n, 10n]);
  assert.deepEqual(game.subscribedAfter, [6n]);
});

test("a gap in the seqs breaks the stream's contract", async () => {
  const { match } = fakeGame([{ skip: 4n }]);
  await assert.rejects(collect(match()), StreamContractError);
});

test("a refusal is not retried", async () => {
  const denied = new ConnectError("not yours", Code.PermissionDenied, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "ERROR_REASON_SPECTATORS_NOT_ALLOWED", domain: DAST_ERROR_DOMAIN } },
  ]);
  const { match, game } = fakeGame([{ failAfter: 0n, error: denied }]);
  await assert.rejects(collect(match()), (error: unknown) => {
    assert.ok(error instanceof DastError);
    assert.equal(error.reason, ErrorReason.SPECTATORS_NOT_ALLOWED);
    return true;
  });
  assert.equal(game.subscribedAfter.length, 1);
});

test("a stream that keeps failing before any event gives up after maxAttempts", async () => {
  const always = { failAfter: 0n, error: new ConnectError("down", Code.Unavailable) };
  const { match, game } = fakeGame([always, always, always, always, always]);
  await assert.rejects(collect(match()), (error: unknown) => error instanceof DastError && error.code === Code.Unavailable);
  assert.equal(game.subscribedAfter.length, FAST.maxAttempts);
});

test("the seat acts once per state: the events' turn and view, then the reply's", async () => {
  const { match: open, game } = fakeGame([]);
  const match = open();
  const updates = match.updates();
  assert.equal((await updates.next()).value?.kind, "connected");
  const first = match.moveToMake;
  assert.ok(first !== undefined && first.seq === 1n && first.view.case === "hokm");
  const outcome = await match.act(first, PLAY_ACE);
  assert.ok(outcome.applied);
  assert.equal(match.state?.seq, 2n, "the reply's state replaces the view's");
  assert.equal(pendingMoveSeq(match), undefined, "the reply says seat 1 acts next");
  assert.equal((await updates.next()).value?.kind, "event"); // seq 1: older than the reply
  assert.equal(match.state?.seq, 2n);
  await updates.return(undefined);
  assert.equal(game.commands[0]?.expectedSeq, 1n);
});

test("a command that fails in transit is resent with the same command id", async () => {
  const reset = new ConnectError("read ECONNRESET", Code.Aborted);
  const { match: open, game } = fakeGame([], [reset, new ConnectError("unavailable", Code.Unavailable)]);
  const match = open();
  const reply = await match.submit(PLAY_ACE, 4n);
  assert.equal(reply.seq, 5n);
  assert.equal(game.commands.length, 3);
  assert.equal(new Set(game.commands.map((command) => command.commandId)).size, 1);
  assert.equal(match.resends, 2);
});

test("a stale move is reported, not resent, and not tried again from the same state", async () => {
  const stale = new ConnectError("stale", Code.Aborted, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "ERROR_REASON_STALE_EXPECTED_SEQ", domain: DAST_ERROR_DOMAIN } },
  ]);
  const { match: open, game } = fakeGame([], [stale]);
  const match = open();
  const updates = match.updates();
  await updates.next();
  const move = match.moveToMake;
  assert.ok(move !== undefined);
  const outcome = await match.act(move, PLAY_ACE);
  assert.ok(!outcome.applied && outcome.error.reason === ErrorReason.STALE_EXPECTED_SEQ);
  assert.equal(game.commands.length, 1);
  assert.equal(pendingMoveSeq(match), undefined, "wait for a newer state");
  await updates.next(); // seq 1: not newer than the view the move was decided from
  assert.equal(pendingMoveSeq(match), undefined);
  await updates.next(); // seq 2: a newer state, the seat's turn again
  assert.equal(pendingMoveSeq(match), 2n);
  await updates.return(undefined);
});
