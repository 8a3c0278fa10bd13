// One match seen from one seat. By default over one `GameService.Play` stream
// (docs/clients.md "Play stream"): the seat's events and its commands' outcomes on one
// bidirectional stream, opened again after a drop with `after_seq` = the last seq received
// (with backoff), the commands without an outcome sent again with their own command ids, the
// access token renewed on the stream before it expires, and a stream that says nothing for
// `silenceMs` (the server sends a heartbeat every 5 s) taken for dead. With `via: "unary"`,
// the older pair: a Subscribe stream and a SubmitCommand call per move. Either way, whose
// turn it is and what the seat may do come from the view read at each (re)connection, then
// from the events (and unary replies): no GetView after each event.
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code as ConnectCode, ConnectError, type Client } from "@connectrpc/connect";
import type {
  GameService,
  GetViewResponse,
  PlayOutcome,
  PlayResponse,
  SubmitCommandRequestSchema,
  SubmitCommandResponse,
  SubscribeResponse,
  Turn,
} from "./gen/dast/v1/game_pb.js";
import type { Event } from "./gen/dast/v1/log_pb.js";
import { Channel } from "./channel.js";
import { CommandBook, type PlayRequestInit } from "./commands.js";
import { Code, DastError, ErrorReason, StreamContractError } from "./errors.js";
import { DEFAULT_BACKOFF, backoffDelayMs, sleep, type Backoff } from "./retry.js";

/** How long a Play stream may say nothing before it is taken for dead: two heartbeats. */
export const PLAY_SILENCE_MS = 10_000;
/** How long a command may wait for its outcome on a stream that otherwise talks. */
export const PLAY_OUTCOME_MS = 15_000;

/** Where a Play stream gets the access tokens it renews itself with (the client's session). */
export interface StreamAuth {
  /** The access token to use now (refreshed first when it is due). */
  accessToken(): Promise<string>;
  /** Milliseconds until the access token is due for renewal. */
  msUntilRenewal(): number;
}

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
  /** "play" (the default): one Play stream; "unary": Subscribe and a SubmitCommand per move. */
  readonly via?: "play" | "unary";
  /** A Play stream silent this long (no event, outcome or heartbeat) is opened again. */
  readonly silenceMs?: number;
  /** A Play stream holding a command without its outcome this long is opened again. */
  readonly outcomeMs?: number;
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
  | {
      readonly applied: true;
      /** A resend of a command the server had applied: nothing was appended this time. */
      readonly duplicate: boolean;
      /** The seq of the last event the command appended. */
      readonly lastSeq: bigint;
      /** The SubmitCommand reply (`via: "unary"` only). */
      readonly reply?: SubmitCommandResponse;
    }
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
  /** Play streams that said nothing for `silenceMs`, or held an outcome past `outcomeMs`. */
  deadStreams = 0;
  /** Access tokens handed to the server on a Play stream (`PlayRenewal`). */
  renewals = 0;
  private unaryResends = 0;
  private readonly backoff: Backoff;
  private readonly commands: CommandBook;
  /** Whether `updates()` runs (Play commands travel on its stream). */
  private following = false;
  /** The seq of the state the last move was decided from: one attempt per state. */
  private actedAtSeq = -1n;

  constructor(
    private readonly game: Client<typeof GameService>,
    readonly gameId: string,
    private readonly options: MatchOptions = {},
    private readonly auth?: StreamAuth,
  ) {
    this.lastSeq = options.afterSeq ?? 0n;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.commands = new CommandBook(this.backoff);
  }

  /** Commands sent again with the same command id (after a drop, a transient failure or refusal). */
  get resends(): number {
    return this.unaryResends + this.commands.resends;
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
    if (this.options.via === "unary") {
      yield* this.subscribeUpdates();
      return;
    }
    if (this.following) throw new Error("the match's updates are already being read");
    this.following = true;
    try {
      yield* this.playUpdates();
    } catch (thrown) {
      this.commands.failAll(thrown);
      throw thrown;
    } finally {
      this.following = false;
      this.commands.failAll(new Error("the match's stream ended before the command's outcome arrived"));
    }
  }

  private async *subscribeUpdates(): AsyncGenerator<MatchUpdate, void, undefined> {
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
          yield this.receive(next.value);
          failures = 0; // the stream works again: a later drop starts a fresh backoff
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
   * The updates of Play streams, one after another. A task of its own opens them and reads
   * them (so that the app may await a command's outcome while it holds an update, and a
   * stream that drops meanwhile is opened again): each with `after_seq` = the last seq
   * received and the commands still without an outcome, then the view read once.
   */
  private async *playUpdates(): AsyncGenerator<MatchUpdate, void, undefined> {
    const updates = new Channel<MatchUpdate>();
    const stop = new AbortController();
    const stopAll = (): void => stop.abort(this.options.signal?.reason);
    if (this.options.signal?.aborted) stopAll();
    this.options.signal?.addEventListener("abort", stopAll, { once: true });
    const streams = this.followPlay(updates, stop.signal).then(
      () => updates.close(),
      (error: unknown) => updates.fail(error),
    );
    try {
      yield* updates;
    } finally {
      this.options.signal?.removeEventListener("abort", stopAll);
      stop.abort(); // the app stopped reading: the stream goes
      await streams;
    }
  }

  /** Open Play streams one after another into `updates` until the match's end (resolves) or a refusal (throws). */
  private async followPlay(updates: Channel<MatchUpdate>, stop: AbortSignal): Promise<void> {
    let failures = 0;
    for (;;) {
      const call = new AbortController();
      const stopCall = (): void => call.abort(stop.reason);
      stop.addEventListener("abort", stopCall, { once: true });
      const requests = new Channel<PlayRequestInit>();
      try {
        const afterSeq = this.lastSeq;
        const token = await this.auth?.accessToken();
        requests.push({ kind: { case: "open", value: { gameId: this.gameId, afterSeq } } });
        this.commands.attach((request) => requests.push(request));
        const responses = this.game.play(requests, { signal: call.signal, timeoutMs: 0 });
        const stream = new Channel<MatchUpdate>();
        void this.readPlay(responses[Symbol.asyncIterator](), stream, call);
        if (token !== undefined) void this.keepRenewed(token, requests, call.signal);
        const reply = await this.game.getView({ gameId: this.gameId }, { signal: call.signal });
        this.observeClock(reply.serverTimeMs);
        this.advance({ seq: reply.seq, turn: reply.turn, view: reply.view });
        this.connections += 1;
        updates.push({ kind: "connected", afterSeq, reconnection: this.connections > 1 });
        for await (const update of stream) {
          updates.push(update);
          failures = 0; // the stream works again: a later drop starts a fresh backoff
        }
        return; // the server ends the stream after the match's final event
      } catch (thrown) {
        if (thrown instanceof StreamContractError || stop.aborted) throw thrown;
        const error = DastError.from(thrown);
        failures += 1;
        // An expired access token: the client refreshed it meanwhile (session.ts), so the
        // stream opens again at once, after the last seq received, as after a drop.
        const expired = error.reason === ErrorReason.TOKEN_EXPIRED;
        if (!(error.transient || expired) || failures >= this.backoff.maxAttempts) throw error;
        if (!expired) await sleep(backoffDelayMs(this.backoff, failures, error.retryDelayMs), stop);
      } finally {
        this.commands.detach();
        stop.removeEventListener("abort", stopCall);
        requests.close();
        call.abort();
      }
    }
  }

  /**
   * Read one Play stream into `updates` until it ends (closed) or fails (failed): events
   * advance the seat's state as they arrive, outcomes settle their commands. A stream that
   * says nothing for `silenceMs`, or holds a command's outcome past `outcomeMs`, is cut.
   */
  private async readPlay(
    responses: AsyncIterator<PlayResponse>,
    updates: Channel<MatchUpdate>,
    call: AbortController,
  ): Promise<void> {
    const silenceMs = this.options.silenceMs ?? PLAY_SILENCE_MS;
    const outcomeMs = this.options.outcomeMs ?? PLAY_OUTCOME_MS;
    try {
      for (;;) {
        const next = responses.next();
        next.catch(() => undefined); // left behind when the stream is cut for silence
        const oldest = this.commands.oldestSentAt();
        const waitMs = oldest === undefined ? silenceMs : Math.min(silenceMs, Math.max(0, oldest + outcomeMs - Date.now()));
        let timer: ReturnType<typeof setTimeout> | undefined;
        const silent = new Promise<"silent">((resolve) => {
          timer = setTimeout(() => resolve("silent"), waitMs);
        });
        const result = await Promise.race([next, silent]).finally(() => clearTimeout(timer));
        if (result === "silent") {
          this.deadStreams += 1;
          call.abort();
          const overdue = oldest !== undefined && Date.now() - oldest >= outcomeMs;
          throw new ConnectError(
            overdue ? `no outcome for a command in ${outcomeMs} ms` : `the stream said nothing for ${silenceMs} ms`,
            ConnectCode.Unavailable,
          );
        }
        if (result.done === true) {
          // The server ends the stream after the match's final event and the outcome of the
          // command that made it: a command still waiting will not be answered.
          this.commands.failAll(new Error("the match is over: the command was not applied"));
          break;
        }
        const message = result.value.kind;
        if (message.case === "event") {
          updates.push(this.receive(message.value));
        } else if (message.case === "outcome") {
          this.observeClock(message.value.serverTimeMs);
          this.commands.settle(message.value);
        } else if (message.case === "heartbeat") {
          this.observeClock(message.value.serverTimeMs);
        }
      }
      updates.close();
    } catch (thrown) {
      updates.fail(thrown);
    }
  }

  /**
   * Renew the stream's access token on the stream before it expires: whenever the session's
   * token is due, the fresh one (refreshed through AccountsService) goes as a `PlayRenewal`.
   */
  private async keepRenewed(opened: string, requests: Channel<PlayRequestInit>, signal: AbortSignal): Promise<void> {
    const auth = this.auth;
    if (auth === undefined) return;
    let current = opened;
    while (!signal.aborted) {
      try {
        await sleep(auth.msUntilRenewal() + 1, signal);
        const token = await auth.accessToken();
        if (token !== current && !signal.aborted) {
          requests.push({ kind: { case: "renewal", value: { accessToken: token } } });
          this.renewals += 1;
          current = token;
        }
      } catch {
        if (signal.aborted) return;
        await sleep(500, signal).catch(() => undefined); // the refresh failed: try again soon
      }
    }
  }

  /** An event from a stream: checked against the stream's contract, then applied. */
  private receive(message: SubscribeResponse): MatchUpdate {
    const event = message.event;
    if (event === undefined || event.seq !== this.lastSeq + 1n) {
      throw new StreamContractError(`expected event ${this.lastSeq + 1n}, received ${event?.seq ?? "none"}`);
    }
    if (message.turn?.yourTurn && message.view.case === undefined) {
      throw new StreamContractError(`event ${event.seq}: the seat's turn without its view`);
    }
    this.lastSeq = event.seq;
    this.observeClock(message.serverTimeMs);
    // Replayed history carries no turn; the newest and every live event do.
    if (message.turn !== undefined) {
      this.advance({ seq: event.seq, turn: message.turn, view: message.view });
    }
    return { kind: "event", event, hash: message.hash };
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
      if (this.options.via === "unary") {
        const reply = await this.submit(command, from.seq);
        this.advance({ seq: reply.seq, turn: reply.turn, view: reply.view });
        return { applied: true, duplicate: reply.duplicate, lastSeq: reply.seq, reply };
      }
      // The outcome comes after the command's events: the state is theirs already.
      const outcome = await this.send(command, from.seq);
      return { applied: true, duplicate: outcome.duplicate, lastSeq: outcome.lastSeq };
    } catch (thrown) {
      const error = DastError.from(thrown);
      if (error.code === Code.Aborted && error.refusedByServer) return { applied: false, error };
      throw error;
    }
  }

  /**
   * Send a command on the match's Play stream (`updates()` must be running): resolves with
   * its accepted outcome, after the events it appended were received. Until the outcome
   * arrives it is sent again, with the same command id, on every stream opened after a drop,
   * and after a refusal worth a retry (RESOURCE_EXHAUSTED, UNAVAILABLE: after RetryInfo's
   * delay); the server applies it once. Any other refusal rejects with a DastError
   * (ABORTED `ERROR_REASON_STALE_EXPECTED_SEQ`: the log moved on; decide again).
   */
  send(command: GameCommand, expectedSeq: bigint | undefined, commandId: string = randomUUID()): Promise<PlayOutcome> {
    if (!this.following) {
      return Promise.reject(new Error("a Play command travels on the match's stream: read match.updates() first"));
    }
    return this.commands.add({ commandId, expectedSeq, command });
  }

  /**
   * Send one attempt at a move as a SubmitCommand call (the unary path). `expectedSeq` is the seq of the state the player decided
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
        this.unaryResends += 1;
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
