// The commands a match sent on its Play streams that have no final outcome yet. Each waits
// for the outcome carrying its command id; every stream opened again sends the waiting ones
// again with their own ids (the server answers one it applied before `OK, duplicate`), and a
// refusal worth a retry (a limit, the store away: nothing was appended, so no event would
// say "act again") sends it again after RetryInfo's delay.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PlayCommandSchema, PlayOutcome, PlayRequestSchema } from "./gen/dast/v1/game_pb.js";
import { DastError } from "./errors.js";
import { backoffDelayMs, type Backoff } from "./retry.js";

export type PlayRequestInit = MessageInitShape<typeof PlayRequestSchema>;
export type PlayCommandInit = MessageInitShape<typeof PlayCommandSchema> & { readonly commandId: string };

interface Waiting {
  readonly command: PlayCommandInit;
  readonly resolve: (outcome: PlayOutcome) => void;
  readonly reject: (error: unknown) => void;
  /** Refusals worth a retry in a row. */
  refusals: number;
  /** When it was last sent (Date.now); undefined while it waits to be sent. */
  sentAt: number | undefined;
  retryTimer: ReturnType<typeof setTimeout> | undefined;
  sends: number;
}

export class CommandBook {
  /** Commands sent again: on a stream opened again, or after a refusal worth a retry. */
  resends = 0;
  private readonly waiting = new Map<string, Waiting>();
  private send: ((request: PlayRequestInit) => void) | undefined;

  constructor(private readonly backoff: Backoff) {}

  /** A stream is open: every waiting command goes on it (again, for those sent before). */
  attach(send: (request: PlayRequestInit) => void): void {
    this.send = send;
    for (const command of this.waiting.values()) this.transmit(command);
  }

  /** The stream is gone: the waiting commands wait for the next one. */
  detach(): void {
    this.send = undefined;
    for (const command of this.waiting.values()) {
      clearTimeout(command.retryTimer);
      command.retryTimer = undefined;
      command.sentAt = undefined;
    }
  }

  /** Send `command` (now, or on the next stream); resolves with its accepted outcome. */
  add(command: PlayCommandInit): Promise<PlayOutcome> {
    if (this.waiting.has(command.commandId)) {
      return Promise.reject(new Error(`command ${command.commandId} is already waiting for its outcome`));
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { command, resolve, reject, refusals: 0, sentAt: undefined, retryTimer: undefined, sends: 0 };
      this.waiting.set(command.commandId, waiting);
      this.transmit(waiting);
    });
  }

  /**
   * The outcome of a command arrived: accepted, it resolves; refused, it rejects with the
   * refusal as a DastError, unless the refusal is worth a retry (then it is sent again later).
   */
  settle(outcome: PlayOutcome): void {
    const waiting = this.waiting.get(outcome.commandId);
    if (waiting === undefined) return; // not this match's, or settled already
    const status = outcome.status;
    if (status === undefined || status.code === 0) {
      this.waiting.delete(outcome.commandId);
      waiting.resolve(outcome);
      return;
    }
    const error = DastError.fromStatus(status);
    waiting.refusals += 1;
    if (error.transient && waiting.refusals < this.backoff.maxAttempts) {
      waiting.sentAt = undefined;
      const delay = backoffDelayMs(this.backoff, waiting.refusals, error.retryDelayMs);
      waiting.retryTimer = setTimeout(() => this.transmit(waiting), delay);
      return;
    }
    this.waiting.delete(outcome.commandId);
    waiting.reject(error);
  }

  /** When the longest-waiting command on the stream was sent (undefined: none waits). */
  oldestSentAt(): number | undefined {
    let oldest: number | undefined;
    for (const { sentAt } of this.waiting.values()) {
      if (sentAt !== undefined && (oldest === undefined || sentAt < oldest)) oldest = sentAt;
    }
    return oldest;
  }

  /** The match's streams are over: every waiting command fails with `error`. */
  failAll(error: unknown): void {
    this.detach();
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const command of waiting) command.reject(error);
  }

  private transmit(waiting: Waiting): void {
    clearTimeout(waiting.retryTimer);
    waiting.retryTimer = undefined;
    if (this.send === undefined || !this.waiting.has(waiting.command.commandId)) {
      waiting.sentAt = undefined;
      return;
    }
    if (waiting.sends > 0) this.resends += 1;
    waiting.sends += 1;
    waiting.sentAt = Date.now();
    this.send({ kind: { case: "command", value: waiting.command } });
  }
}
