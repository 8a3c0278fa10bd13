// A TCP proxy in front of the server whose connections the test can cut at any moment: what a
// phone losing its network does to the client's HTTP/2 connection, streams and calls on it.
import { createServer, connect, type Server, type Socket } from "node:net";

export class CuttableProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** Connections cut so far. */
  cuts = 0;

  private constructor(server: Server) {
    this.server = server;
  }

  /** Listens on a free loopback port and forwards every connection to `target` (host:port). */
  static async start(target: string): Promise<CuttableProxy> {
    const [host, port] = splitAddress(target);
    let proxy: CuttableProxy | undefined;
    const server = createServer((client) => {
      const upstream = connect(port, host);
      proxy?.track(client, upstream);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    proxy = new CuttableProxy(server);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return proxy;
  }

  /** The address clients dial instead of the server's. */
  get address(): string {
    const bound = this.server.address();
    if (bound === null || typeof bound === "string") throw new Error("the proxy is not listening");
    return `127.0.0.1:${bound.port}`;
  }

  /** Drops every open connection at once, without a goodbye (new connections still work). */
  cut(): void {
    this.cuts += 1;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(client: Socket, upstream: Socket): void {
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      // One side gone: the other goes too, as a real broken path would leave it.
      socket.on("error", () => undefined);
      socket.on("close", () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
  }
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(":");
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new Error(`not a host:port address: ${address}`);
  }
  return [address.slice(0, colon), port];
}
