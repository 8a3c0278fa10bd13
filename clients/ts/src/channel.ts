// An unbounded async queue between two tasks: one pushes, the other reads with `for await`.
// It carries a Play stream's requests to gRPC and the stream's updates to the app, so the app
// may await a command's outcome while the stream goes on being read.

export class Channel<T> implements AsyncIterableIterator<T, undefined> {
  private readonly items: T[] = [];
  private waiting: ((result: IteratorResult<T, undefined>) => void) | undefined;
  private failWaiting: ((error: unknown) => void) | undefined;
  private closed = false;
  private failure: { readonly error: unknown } | undefined;

  /** Queue `item` (ignored once the channel is closed or failed). */
  push(item: T): void {
    if (this.closed || this.failure !== undefined) return;
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.waiting = this.failWaiting = undefined;
      waiting({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  /** No more items: the reader ends once it has read those queued. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  /** The reader throws `error` once it has read the items queued before. */
  fail(error: unknown): void {
    if (this.closed || this.failure !== undefined) return;
    this.failure = { error };
    this.wake();
  }

  private wake(): void {
    if (this.waiting === undefined || this.items.length > 0) return;
    const [resolve, reject] = [this.waiting, this.failWaiting];
    this.waiting = this.failWaiting = undefined;
    if (this.failure !== undefined) reject?.(this.failure.error);
    else resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T, undefined>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.failure !== undefined) return Promise.reject(this.failure.error);
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  /** The reader stops: nothing more is queued. */
  return(): Promise<IteratorResult<T, undefined>> {
    this.items.length = 0;
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** The reader fails (gRPC aborting a call's requests): nothing more is queued. */
  throw(error?: unknown): Promise<IteratorResult<T, undefined>> {
    void this.return();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
