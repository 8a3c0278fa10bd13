// Every failed call as one typed error: the gRPC code, the dast reason (an enum value, not a
// string to compare), ErrorInfo's metadata, and RetryInfo's delay when a retry may succeed.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorReason, ErrorReasonSchema } from "./gen/dast/v1/errors_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import type { Status } from "./gen/google/rpc/status_pb.js";

export { Code, ErrorReason };

/** The `ErrorInfo.domain` of every error the dast servers send. */
export const DAST_ERROR_DOMAIN = "dast.dev";

/**
 * Refusals by a dast server after which the same request may succeed later: a limit
 * (RESOURCE_EXHAUSTED, after its RetryInfo delay) or a service that did not answer in time.
 */
const TRANSIENT_REFUSALS: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
]);

/**
 * Failures without a dast reason: the network or a restarting server. Node reports a reset
 * connection as ABORTED (ECONNRESET, a destroyed stream) or INTERNAL, and an HTTP/2 stream
 * reset by the peer as CANCELED or INTERNAL; none of them is the server refusing the request.
 */
const TRANSIENT_FAILURES: ReadonlySet<Code> = new Set([
  ...TRANSIENT_REFUSALS,
  Code.Aborted,
  Code.Canceled,
  Code.Internal,
  Code.Unknown,
]);

export class DastError extends Error {
  override readonly name = "DastError";

  private constructor(
    /** The gRPC status code. */
    readonly code: Code,
    /** The reason the server gave (`ERROR_REASON_UNSPECIFIED` when none, or one unknown here). */
    readonly reason: ErrorReason,
    /** `ErrorInfo.reason` as sent: the enum value's name, or "" when the error carried none. */
    readonly reasonName: string,
    /** `ErrorInfo.metadata`: e.g. `field` for a bad request, `ref` for a server fault. */
    readonly metadata: Readonly<Record<string, string>>,
    /** `RetryInfo.retry_delay` in milliseconds, when the server said when to retry. */
    readonly retryDelayMs: number | undefined,
    /** The message, for people: never switch on it. */
    readonly rawMessage: string,
    override readonly cause: ConnectError,
  ) {
    super(`${Code[code]}${reasonName ? ` (${reasonName})` : ""}: ${rawMessage}`);
  }

  /** True when the server refused the call and said why (ErrorInfo of the dast domain). */
  get refusedByServer(): boolean {
    return this.reasonName !== "";
  }

  /**
   * True when resending the same request (a command with the same command id) may succeed:
   * the network failed, or the server asked to come back later. A refusal with a reason
   * (ABORTED `ERROR_REASON_STALE_EXPECTED_SEQ`, an INTERNAL server fault, …) is not.
   */
  get transient(): boolean {
    return (this.refusedByServer ? TRANSIENT_REFUSALS : TRANSIENT_FAILURES).has(this.code);
  }

  /**
   * A refusal carried in a message (a Play stream's `PlayOutcome.status`): the same code,
   * reason and RetryInfo as the SubmitCommand call would have ended with.
   */
  static fromStatus(status: Status): DastError {
    const details = status.details.map((any) => ({
      type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1),
      value: any.value,
    }));
    const error = new ConnectError(status.message, status.code as Code);
    error.details.push(...details);
    return DastError.from(error);
  }

  /** Any thrown value as a DastError (a ConnectError's details decoded, anything else UNKNOWN). */
  static from(thrown: unknown): DastError {
    if (thrown instanceof DastError) return thrown;
    const error = ConnectError.from(thrown);
    const info = error.findDetails(ErrorInfoSchema).find((detail) => detail.domain === DAST_ERROR_DOMAIN);
    const retry = error.findDetails(RetryInfoSchema)[0];
    const delay = retry?.retryDelay;
    const retryDelayMs =
      delay === undefined ? undefined : Number(delay.seconds) * 1000 + delay.nanos / 1_000_000;
    const reasonName = info?.reason ?? "";
    return new DastError(
      error.code,
      reasonOf(reasonName),
      reasonName,
      { ...(info?.metadata ?? {}) },
      retryDelayMs,
      error.rawMessage,
      error,
    );
  }
}

/** The enum value an `ErrorInfo.reason` names; UNSPECIFIED for a name this client does not know. */
export function reasonOf(name: string): ErrorReason {
  const value = ErrorReasonSchema.values.find((candidate) => candidate.name === name);
  return value === undefined ? ErrorReason.UNSPECIFIED : (value.number as ErrorReason);
}

/** A server that broke the stream's contract (a gap or a repeat in the event seqs). */
export class StreamContractError extends Error {
  override readonly name = "StreamContractError";
}
