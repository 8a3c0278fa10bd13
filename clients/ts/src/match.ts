// One match seen from one seat: the event stream that resumes by itself after a drop
// (Subscribe again with `after_seq` = the last seq received, with backoff), whose turn the
// seat is and what it may do (from the view read at each (re)connection, then from the
// events and the commands' replies: no GetView after each event), and commands sent with
// `expected_seq` and a command id, resent unchanged when the network fails.
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type {
  GameService,
  GetViewResponse,
  SubmitCommandRequestSchema,
  SubmitCommandResponse,
  Turn,
} from "./gen/dast/v1/game_pb.js";
import type { Event } from "./gen/dast/v1/log_pb.js";
import { Code, DastError, ErrorReason, StreamContractError } from "./errors.js";
import { DEFAULT_BACKOFF, backoffDelayMs, sleep, type Backoff } from "./retry.js";

/** A game's command, as `SubmitCommandRequest.command` takes it (`{case: "hokm", value}`). */
export type GameCommand = MessageInitShape<typeof SubmitCommandRequestSchema>["command"];

/** A seat's view of a game, as replies hold it (`{case: "hokm", value: HokmView}`). */
export type SeatView = GetViewResponse["view"];

export interface MatchOptions {
  /** Resume after this seq (kept on the device across an app restart); 0: the whole match. */
  readonly afterSeq?: bigint;
  /** Waits between reconnections and between resends of a command. */
  readonly backoff?: Backoff;
  /** Stops the stream and any wait. */
  readonly signal?: AbortSignal;
}

/** What the seat knows of the match as of one position of its log. */
export interface SeatState {
  /** The log's seq this state follows: a command decided from it carries it as `expected_seq`. */
  readonly seq: bigint;
  /** Who acts next. */
  readonly turn: Turn | undefined;
  /** The seat's view, with `legal`: always when it is the seat's turn. */
  readonly view: SeatView;
}

/** A state in which this seat is to act, with the view it decides from. */
export interface MoveToMake extends SeatState {
  readonly view: Exclude<SeatView, { case: undefined }>;
}

/** What the stream brings, in order. */
export type MatchUpdate =
  | {
      /**
       * A stream is open (the first, or one after a drop) and `match.state` is the seat's view
       * as of then. After a drop that view is what says whose turn it is: when it is this
       * seat's, no event comes until it acts.
       */
      readonly kind: "connected";
      /** The stream resumes after this seq: no event before it is sent again. */
      readonly afterSeq: bigint;
      readonly reconnection: boolean;
    }
  | {
      /** The next event of the log (seqs 1, 2, 3, … without gaps or repeats) and its receipt. */
      readonly kind: "event";
      readonly event: Event;
      /** The chain hash after this event: keep `(seq, hash)` as the receipt. */
      readonly hash: Uint8Array;
    };

/** How an attempt at a move ended. */
export type ActOutcome =
  | { readonly applied: true; readonly reply: SubmitCommandResponse }
  /**
   * The log moved on before the move arrived (ABORTED: a stale `expected_seq`, or another
   * command won the race): nothing was appended; the stream brings what happened, and the
   * seat decides again from the newer state.
   */
  | { readonly applied: false; readonly error: DastError };

export class Match {
  /** The highest seq received on the stream: where it resumes after a drop. */
  lastSeq: bigint;
  /** Streams opened so far (1 + the reconnections). */
  connections = 0;
  /** The newest state the seat knows (undefined until the first connection). */
  state: SeatState | undefined;
  /**
   * The server's clock minus this machine's, in milliseconds: show a `deadline_ms` as
   * `deadline_ms - clockOffsetMs` on the local clock. Each reply stamped `server_time_ms`
   * arrives after it was stamped, so `server_time_ms - arrival` is below the true offset by
   * the reply's latency: the largest such sample is the closest.
   */
  clockOffsetMs: number | undefined;
  /** Commands sent again (same command id) after a transient failure. */
  resends = 0;
  private readonly backoff: Backoff;
  /** The seq of the state the last move was decided from: one attempt per state. */
  private actedAtSeq = -1n;

  constructor(
    private readonly game: Client<typeof GameService>,
    readonly gameId: string,
    private readonly options: MatchOptions = {},
  ) {
    this.lastSeq = options.afterSeq ?? 0n;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  /**
   * The match's events after `lastSeq` until its final event, across drops: a stream that
   * fails with a transient error is opened again with `after_seq` = the last seq received,
   * after a backoff, and the seat's view is read once. Each event comes once, in order.
   * A stream refused because the access token expired opens again at once with the refreshed
   * one. Ends when the server closes the stream after the final event; throws a DastError
   * when the server refuses (NOT_FOUND, PERMISSION_DENIED, …) or after `backoff.maxAttempts`
   * failures in a row.
   */
  async *updates(): AsyncGenerator<MatchUpdate, void, undefined> {
    let failures = 0;
    for (;;) {
      const call = new AbortController();
      const stopCall = (): void => call.abort(this.options.signal?.reason);
      this.options.signal?.addEventListener("abort", stopCall, { once: true });
      try {
        // The stream is requested before the view is read, so that no event falls between
        // the two: events up to the view's seq may still come, and are older than the view.
        const afterSeq = this.lastSeq;
        const messages = this.game
          .subscribe({ gameId: this.gameId, afterSeq }, { signal: call.signal, timeoutMs: 0 })
          [Symbol.asyncIterator]();
        // Awaited below; when the view fails first, the stream's own failure must not go
        // unhandled (Node ends the process on an unhandled rejection).
        const first = messages.next();
        first.catch(() => undefined);
        const reply = await this.game.getView({ gameId: this.gameId }, { signal: call.signal });
        this.observeClock(reply.serverTimeMs);
        this.advance({ seq: reply.seq, turn: reply.turn, view: reply.view });
        this.connections += 1;
        yield { kind: "connected", afterSeq, reconnection: this.connections > 1 };
        for (let next = await first; next.done !== true; next = await messages.next()) {
          const message = next.value;
          const event = message.event;
          if (event === undefined || event.seq !== this.lastSeq + 1n) {
            throw new StreamContractError(
              `expected event ${this.lastSeq + 1n}, received ${event?.seq ?? "none"}`,
            );
          }
          if (message.turn?.yourTurn && message.view.case === undefined) {
            throw new StreamContractError(`event ${event.seq}: the seat's turn without its view`);
          }
          this.lastSeq = event.seq;
          failures = 0; // the stream works again: a later drop starts a fresh backoff
          this.observeClock(message.serverTimeMs);
          // Replayed history carries no turn; the newest and every live event do.
          if (message.turn !== undefined) {
            this.advance({ seq: event.seq, turn: message.turn, view: message.view });
          }
          yield { kind: "event", event, hash: message.hash };
        }
        return; // the server ends the stream after the match's final event
      } catch (thrown) {
        if (thrown instanceof StreamContractError || this.options.signal?.aborted) throw thrown;
        const error = DastError.from(thrown);
        failures += 1;
        // An expired access token: the client refreshed it meanwhile (session.ts), so the
        // stream opens again at once, after the last seq received, as after a drop.
        const expired = error.reason === ErrorReason.TOKEN_EXPIRED;
        if (!(error.transient || expired) || failures >= this.backoff.maxAttempts) throw error;
        if (!expired) {
          await sleep(backoffDelayMs(this.backoff, failures, error.retryDelayMs), this.options.signal);
        }
      } finally {
        this.options.signal?.removeEventListener("abort", stopCall);
        call.abort(); // closes the stream when the consumer stops early
      }
    }
  }

  /**
   * The state to decide a move from, when this seat is to act and has not yet tried a move
   * from it; undefined otherwise (another seat acts, the match is over, or the seat's
   * attempt at this state was refused as stale and a newer state is on its way).
   */
  get moveToMake(): MoveToMake | undefined {
    const state = this.state;
    if (state === undefined || !state.turn?.yourTurn || state.seq <= this.actedAtSeq) return undefined;
    const view = state.view;
    if (view.case === undefined) return undefined;
    return { ...state, view };
  }

  /**
   * Make the move decided from `from` (a `moveToMake`): sent with `expected_seq` = its seq
   * and a fresh command id. Its reply tells who acts next and holds the seat's new view.
   * Refusals other than the log having moved on throw a DastError.
   */
  async act(from: SeatState, command: GameCommand): Promise<ActOutcome> {
    this.actedAtSeq = from.seq > this.actedAtSeq ? from.seq : this.actedAtSeq;
    try {
      const reply = await this.submit(command, from.seq);
      this.advance({ seq: reply.seq, turn: reply.turn, view: reply.view });
      return { applied: true, reply };
    } catch (thrown) {
      const error = DastError.from(thrown);
      if (error.code === Code.Aborted && error.refusedByServer) return { applied: false, error };
      throw error;
    }
  }

  /**
   * Send one attempt at a move. `expectedSeq` is the seq of the state the player decided
   * from: when anything happened since, the server refuses with ABORTED
   * (`ERROR_REASON_STALE_EXPECTED_SEQ`): do not resend, decide again from the newer state.
   * A transient failure (the network, a restart, a limit) resends the same request with the
   * same command id, so the server applies the move at most once and a resend of an applied
   * move answers its events again with `duplicate` set.
   */
  async submit(
    command: GameCommand,
    expectedSeq: bigint | undefined,
    commandId: string = randomUUID(),
  ): Promise<SubmitCommandResponse> {
    const request = { gameId: this.gameId, commandId, expectedSeq, command };
    for (let attempt = 1; ; attempt += 1) {
      try {
        const reply = await this.game.submitCommand(request, { signal: this.options.signal });
        this.observeClock(reply.serverTimeMs);
        return reply;
      } catch (thrown) {
        if (this.options.signal?.aborted) throw thrown;
        const error = DastError.from(thrown);
        if (!error.transient || attempt >= this.backoff.maxAttempts) throw error;
        await sleep(backoffDelayMs(this.backoff, attempt, error.retryDelayMs), this.options.signal);
        this.resends += 1;
      }
    }
  }

  /** Keep the newer of the known state and `next`: replies and events may cross. */
  private advance(next: SeatState): void {
    if (this.state === undefined || next.seq >= this.state.seq) this.state = next;
  }

  private observeClock(serverTimeMs: bigint): void {
    if (serverTimeMs === 0n) return; // a server that does not stamp its replies
    const sample = Number(serverTimeMs) - Date.now();
    this.clockOffsetMs = this.clockOffsetMs === undefined ? sample : Math.max(this.clockOffsetMs, sample);
  }
}
