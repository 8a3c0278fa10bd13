// Waiting between attempts: exponential backoff with full jitter, cut short by an abort.

/** How long to wait before the n-th retry, and how many retries to make. */
export interface Backoff {
  /** The first wait's upper bound, in milliseconds. */
  readonly initialMs: number;
  /** No wait is longer than this. */
  readonly maxMs: number;
  /** Give up after this many failed attempts in a row. */
  readonly maxAttempts: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 100, maxMs: 5_000, maxAttempts: 8 };

/**
 * The wait before retry number `attempt` (1-based): a random time up to
 * `initialMs * 2^(attempt-1)` (capped at `maxMs`), so that many clients dropped at once do
 * not come back at once; never shorter than the server's `RetryInfo` delay when it gave one.
 */
export function backoffDelayMs(backoff: Backoff, attempt: number, serverDelayMs?: number): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.random() * ceiling;
  return Math.max(jittered, serverDelayMs ?? 0);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
