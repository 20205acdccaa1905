// A minimal WebSocket client (RFC 6455) over node:http's upgrade, for the
// terminal: Node 18 and 20 have no global WebSocket, and the WHATWG one
// cannot send the Authorization header the API needs. Client frames are
// masked; fragmented messages are joined; pings are answered.
import { readError } from "./errors.js";

/** A message: text (a UTF-8 string's bytes) or binary. */
export interface WsMessage {
  binary: boolean;
  data: Uint8Array;
}

/** An open WebSocket. */
export interface WsConn {
  /** The messages, until the server closes the connection. */
  messages(): AsyncGenerator<WsMessage>;
  /** Sends a text (string) or binary message. */
  send(data: string | Uint8Array): void;
  /** Closes the connection (normal closure). */
  close(): void;
}

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const MAX_MESSAGE = 16 << 20;

/** Opens a WebSocket to url (http(s) or ws(s)) with headers. */
export async function dialWebSocket(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<WsConn> {
  const u = new URL(url.replace(/^ws/, "http"));
  const http = u.protocol === "https:" ? await import("node:https") : await import("node:http");
  const { randomBytes, createHash } = await import("node:crypto");
  const key = randomBytes(16).toString("base64");
  const want = createHash("sha1").update(key + GUID).digest("base64");

  type Socket = import("node:net").Socket;
  const { socket, head } = await new Promise<{ socket: Socket; head: Buffer }>((resolve, reject) => {
    const req = http.request(u, {
      headers: {
        ...headers,
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
      },
      signal,
    });
    req.on("upgrade", (res, socket, head) => {
      if (res.headers["sec-websocket-accept"] !== want) {
        socket.destroy();
        reject(new Error("hutch: websocket: bad Sec-WebSocket-Accept"));
        return;
      }
      resolve({ socket: socket as Socket, head });
    });
    req.on("response", (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => {
        const body = Buffer.concat(parts);
        readError(new Response(body.length ? body : null, { status: res.statusCode ?? 500, statusText: res.statusMessage }))
          .then(reject, reject);
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
  socket.setNoDelay(true);
  return new Conn(socket, head, signal);
}

class Conn implements WsConn {
  #socket: import("node:net").Socket;
  #buf: Buffer;
  #queue: WsMessage[] = [];
  #wake?: () => void;
  #ended = false;
  #error?: Error;
  #frag: Buffer[] = [];
  #fragBinary = false;
  #closeSent = false;

  constructor(socket: import("node:net").Socket, head: Buffer, signal?: AbortSignal) {
    this.#socket = socket;
    this.#buf = head;
    socket.on("data", (c: Buffer) => {
      this.#buf = this.#buf.length ? Buffer.concat([this.#buf, c]) : c;
      try {
        this.#parse();
      } catch (e) {
        this.#fail(e as Error);
      }
    });
    socket.on("close", () => this.#end());
    socket.on("error", (e) => this.#fail(e));
    signal?.addEventListener("abort", () => this.#fail(signal.reason ?? new Error("aborted")), { once: true });
    if (head.length) queueMicrotask(() => this.#parse());
  }

  #end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  #fail(e: Error): void {
    this.#error ??= e;
    this.#socket.destroy();
    this.#end();
  }

  #parse(): void {
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      const fin = (b[0] & 0x80) !== 0;
      const op = b[0] & 0x0f;
      const masked = (b[1] & 0x80) !== 0;
      let len = b[1] & 0x7f;
      let o = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        o = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        const big = b.readBigUInt64BE(2);
        if (big > BigInt(MAX_MESSAGE)) throw new Error("hutch: websocket: frame too large");
        len = Number(big);
        o = 10;
      }
      const maskAt = o;
      if (masked) o += 4;
      if (b.length < o + len) return;
      const payload = Buffer.from(b.subarray(o, o + len));
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= b[maskAt + (i & 3)];
      this.#buf = b.subarray(o + len);
      this.#frame(fin, op, payload);
    }
  }

  #frame(fin: boolean, op: number, payload: Buffer): void {
    switch (op) {
      case 0x9: // ping
        this.#write(0xa, payload);
        return;
      case 0xa: // pong
        return;
      case 0x8: // close
        if (!this.#closeSent) this.#write(0x8, payload.subarray(0, 2));
        this.#closeSent = true;
        this.#socket.end();
        this.#end();
        return;
      case 0x1:
      case 0x2:
        this.#frag = [payload];
        this.#fragBinary = op === 0x2;
        break;
      case 0x0:
        this.#frag.push(payload);
        break;
      default:
        throw new Error(`hutch: websocket: unknown opcode ${op}`);
    }
    if (!fin) return;
    const data = Buffer.concat(this.#frag);
    this.#frag = [];
    this.#queue.push({ binary: this.#fragBinary, data: new Uint8Array(data.buffer, data.byteOffset, data.length) });
    this.#wake?.();
  }

  #write(op: number, payload: Uint8Array): void {
    if (this.#socket.destroyed || this.#closeSent) return;
    const len = payload.length;
    const head = Buffer.alloc(len < 126 ? 2 : len < 65536 ? 4 : 10);
    head[0] = 0x80 | op;
    if (len < 126) head[1] = 0x80 | len;
    else if (len < 65536) {
      head[1] = 0x80 | 126;
      head.writeUInt16BE(len, 2);
    } else {
      head[1] = 0x80 | 127;
      head.writeBigUInt64BE(BigInt(len), 2);
    }
    const mask = Buffer.from(Array.from({ length: 4 }, () => Math.floor(Math.random() * 256)));
    const body = Buffer.from(payload);
    for (let i = 0; i < len; i++) body[i] ^= mask[i & 3];
    this.#socket.write(Buffer.concat([head, mask, body]));
  }

  async *messages(): AsyncGenerator<WsMessage> {
    for (;;) {
      const m = this.#queue.shift();
      if (m) {
        yield m;
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error;
        return;
      }
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }

  send(data: string | Uint8Array): void {
    if (typeof data === "string") this.#write(0x1, Buffer.from(data, "utf8"));
    else this.#write(0x2, data);
  }

  close(): void {
    if (!this.#closeSent) {
      this.#write(0x8, Buffer.from([0x03, 0xe8])); // 1000, normal closure
      this.#closeSent = true;
    }
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), 1000).unref();
  }
}
