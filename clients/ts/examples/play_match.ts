// A whole match played through the public API, as docs/clients.md describes: the
// TypeScript twin of docs/examples/play_hokm.py. Against a server (`make run`):
//
//   cd clients/ts && npm run build && node dist/examples/play_match.js 127.0.0.1:50051 [hokm|hand]
//
// It signs in as a guest of the accounts service (a new device each run; an app keeps the
// device id and the device secret the first sign-in returns), opens a four-player table, starts it (bots take the other seats),
// follows the match over one Play stream (its events and its commands' outcomes; the stream
// resumes by itself after a network drop, sending again the commands whose outcome did not
// arrive) and plays the first legal command whenever its seat is to act, until the final
// event. It calls GetView only when a stream opens: the events say whose turn it is and hold
// the seat's view. Every event's hash is kept as a receipt.
// tests/e2e/test_ts_client.py runs playMatch() against a real server, cutting its network.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { GameType } from "../src/gen/dast/v1/common_pb.js";
import { HokmVariant } from "../src/gen/dast/v1/hokm_pb.js";
import { BotLevel, type TableSettingsSchema } from "../src/gen/dast/v1/lobby_pb.js";
import type { Event } from "../src/gen/dast/v1/log_pb.js";
import {
  DastClient,
  firstLegalCommand,
  type ConnectOptions,
  type Match,
  type MatchUpdate,
} from "../src/index.js";

/** The tables this example opens: four players, bots of the weakest level. */
export const TABLES: Readonly<Record<"hokm" | "hand", MessageInitShape<typeof TableSettingsSchema>>> = {
  // Four-player Hokm to 3 points.
  hokm: {
    gameType: GameType.HOKM,
    targetScore: 3,
    botLevel: BotLevel.RANDOM,
    rules: { case: "hokm", value: { variant: HokmVariant.FOUR_PLAYERS } },
  },
  // Four-player Hand, a game of one round.
  hand: {
    gameType: GameType.HAND,
    botLevel: BotLevel.RANDOM,
    rules: { case: "hand", value: { players: 4, rounds: 1 } },
  },
};

export interface PlayOptions {
  /** The server's host:port. */
  readonly address: string;
  /** Signs the player in over these connection options (the test: with an ID token). */
  readonly signIn: (connection: ConnectOptions) => Promise<DastClient>;
  readonly settings: MessageInitShape<typeof TableSettingsSchema>;
  /** Extra interceptors on every call (the test counts calls with one). */
  readonly interceptors?: readonly Interceptor[];
  /** Called with each update before the seat acts on it (the test cuts the network here). */
  readonly onUpdate?: (update: MatchUpdate, match: Match) => void | Promise<void>;
  readonly signal?: AbortSignal;
}

/** What the client kept of a match. */
export interface MatchRecord {
  readonly gameId: string;
  readonly tableId: string;
  readonly client: DastClient;
  /** `[seq, hash]` of every event, in order: what `dast verify --receipts` checks. */
  readonly receipts: [bigint, Uint8Array][];
  /** The seq after which the stream resumed after each drop. */
  readonly resumedAfter: bigint[];
  /** Moves applied (a resent move answered as a duplicate counts once). */
  moves: number;
  /** Moves refused because the log had moved on (decided again from the newer state). */
  stale: number;
  /** Outcomes marked `duplicate`: a resend of a move the server had applied already. */
  duplicates: number;
  lastEvent: Event | undefined;
  readonly match: Match;
}

export async function playMatch(options: PlayOptions): Promise<MatchRecord> {
  const client = await options.signIn({ address: options.address, interceptors: options.interceptors ?? [] });
  const table = await client.createTable(options.settings);
  const started = await client.startGame(table.tableId);
  const match = client.match(started.gameId, { signal: options.signal });
  const record: MatchRecord = {
    gameId: started.gameId,
    tableId: table.tableId,
    client,
    receipts: [],
    resumedAfter: [],
    moves: 0,
    stale: 0,
    duplicates: 0,
    lastEvent: undefined,
    match,
  };
  for await (const update of match.updates()) {
    if (update.kind === "connected" && update.reconnection) record.resumedAfter.push(update.afterSeq);
    if (update.kind === "event") {
      record.receipts.push([update.event.seq, update.hash]);
      record.lastEvent = update.event;
    }
    await options.onUpdate?.(update, match);
    // While it is this seat's turn (the stream's view, or a reply's), make a move decided
    // from that state: `act` sends it with expected_seq and a fresh command id.
    for (let move = match.moveToMake; move !== undefined; move = match.moveToMake) {
      const outcome = await match.act(move, firstLegalCommand(move));
      if (!outcome.applied) {
        record.stale += 1; // the stream brings what happened first; decide again then
      } else {
        record.moves += 1;
        if (outcome.duplicate) record.duplicates += 1;
      }
    }
  }
  return record; // the stream ended after the match's final event
}

/** The seats the match's final event names as winners (none while the match is on). */
export function winnersOf(event: Event | undefined): number[] {
  const game = event?.game;
  if (game?.case === "hokm" && game.value.kind.case === "matchEnded") return [...game.value.kind.value.winners];
  if (game?.case === "hand" && game.value.kind.case === "matchEnded") return [...game.value.kind.value.winners];
  return [];
}

async function main(): Promise<void> {
  const address = process.argv[2] ?? "127.0.0.1:50051";
  const game = process.argv[3] === "hand" ? "hand" : "hokm";
  const record = await playMatch({
    address,
    // A new device: its first sign-in creates a guest. An app keeps client.newDeviceSecret
    // with the device id, and the session onSession hands it (its refresh token).
    signIn: (connection) => DastClient.signInGuest({ ...connection, deviceId: `example-${randomUUID()}` }),
    settings: TABLES[game],
  });
  const offset = record.match.clockOffsetMs ?? 0;
  process.stdout.write(
    `game ${record.gameId}: ${record.receipts.length} events, ${record.moves} moves played, ` +
      `winners ${JSON.stringify(winnersOf(record.lastEvent))}; server clock offset ${offset.toFixed(0)} ms\n`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
