// A static file server for the replay page: `clients/` at /, and optionally a folder of
// logs at /logs/. `node test/serve.mjs [LOG_DIR] [PORT]` serves it for a look by hand.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const CLIENTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".jsonl": "application/jsonl; charset=utf-8",
  ".png": "image/png",
};

/** Start serving; resolves to {url, close()}. Paths outside the two roots are refused. */
export function serve({ logDir = null, port = 0 } = {}) {
  const server = createServer(async (request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://localhost").pathname);
    const [root, rest] = logDir && path.startsWith("/logs/") ? [logDir, path.slice(6)] : [CLIENTS_DIR, path.slice(1)];
    const file = normalize(join(root, rest));
    if (!file.startsWith(normalize(root) + sep) || file.includes(`${sep}node_modules${sep}`)) {
      response.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await serve({ logDir: process.argv[2] ?? null, port: Number(process.argv[3] ?? 8765) });
  console.log(`${url}/replay-page/index.html${process.argv[2] ? "?log=/logs/FILE.jsonl" : ""}`);
}
