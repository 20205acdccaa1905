// The SDK against a real `hutch serve` (see server.mjs), through the BUILT
// package: the ESM entry by its name, the CommonJS one with require.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { Hutch, HutchError, isHutchError } from "@hutchdev/hutch";
import { startServer } from "./server.mjs";

const require = createRequire(import.meta.url);
const cjs = require("@hutchdev/hutch");
const run = promisify(execFile);
const enc = new TextEncoder();
const dec = new TextDecoder();

let server;
/** @type {Hutch} */
let hutch;
/** @type {import("@hutchdev/hutch").Sandbox} */
let sb;

before(async () => {
  server = await startServer();
  hutch = new Hutch({ baseUrl: server.baseUrl, apiKey: server.apiKey });
  sb = await hutch.sandboxes.create({ env: { GREETING: "hi" }, labels: { suite: "sdk-ts" } });
});

after(async () => {
  await server?.stop(hutch);
});

/** Fails a promise that takes longer than ms. */
function within(ms, p, what) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, reject) => (t = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))),
  ]);
}

describe("client", () => {
  test("the CommonJS build is the same API", () => {
    assert.equal(typeof cjs.Hutch, "function");
    assert.notEqual(cjs.Hutch, Hutch, "two builds, two classes");
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(
      // every runtime export of the ESM build
      { Hutch, HutchError, isHutchError, ...Object.fromEntries(Object.keys(cjs).map((k) => [k, 1])) },
    ).sort());
  });

  test("defaults come from HUTCH_URL and HUTCH_API_KEY", async () => {
    const saved = { url: process.env.HUTCH_URL, key: process.env.HUTCH_API_KEY };
    try {
      process.env.HUTCH_URL = server.baseUrl + "/";
      process.env.HUTCH_API_KEY = server.apiKey;
      const h = new Hutch();
      assert.equal(h.baseUrl, server.baseUrl);
      assert.ok((await h.info()).version !== undefined);
      delete process.env.HUTCH_URL;
      assert.equal(new Hutch().baseUrl, "http://127.0.0.1:7070");
    } finally {
      for (const [k, v] of [["HUTCH_URL", saved.url], ["HUTCH_API_KEY", saved.key]]) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("errors: 404 sandbox_not_found, 400 unknown_field, 401, through both builds", async () => {
    await assert.rejects(hutch.sandboxes.get("no-such-sandbox"), (e) => {
      assert.ok(e instanceof HutchError);
      assert.equal(e.status, 404);
      assert.equal(e.code, "sandbox_not_found");
      assert.ok(e.isNotFound() && !e.isConflict());
      assert.ok(e.message.length > 0);
      return true;
    });
    await assert.rejects(hutch.sandboxes.create({ no_such_field: 1 }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, "unknown_field");
      assert.ok(e.isInvalid());
      return true;
    });
    await assert.rejects(new Hutch({ baseUrl: server.baseUrl, apiKey: "wrong" }).sandboxes.listPage(), (e) => {
      assert.ok(e.isUnauthorized(), `${e.status} ${e.code}`);
      return true;
    });
    const c = new cjs.Hutch({ baseUrl: server.baseUrl, apiKey: server.apiKey });
    await assert.rejects(c.sandboxes.get("no-such-sandbox"), (e) => {
      assert.ok(e instanceof cjs.HutchError);
      assert.ok(!(e instanceof HutchError));
      assert.ok(isHutchError(e), "isHutchError sees the other build's errors");
      assert.equal(e.code, "sandbox_not_found");
      return true;
    });
  });
});

describe("sandboxes", () => {
  test("get, list (paged iterator), lifecycle, metrics, network", async () => {
    const got = await hutch.sandboxes.get(sb.id);
    assert.equal(got.info.state, "running");
    assert.deepEqual(got.info.labels, { suite: "sdk-ts" });
    const other = await hutch.sandboxes.create({ labels: { suite: "sdk-ts" } });
    try {
      const ids = [];
      for await (const s of hutch.sandboxes.list({ labels: { suite: "sdk-ts" }, limit: 1 })) ids.push(s.id);
      assert.deepEqual(ids.sort(), [sb.id, other.id].sort());
      assert.equal((await other.pause()).state, "paused");
      assert.equal((await other.resume()).state, "running");
      assert.equal((await other.keepalive(60)).id, other.id);
      const t = await other.setTimeout(600);
      assert.ok(t.expires_at, "a running sandbox's timeout has an expiry");
      assert.equal((await other.stop()).state, "stopped");
      assert.equal((await other.start()).state, "running");
      const m = await other.metrics();
      assert.ok(m.memory !== undefined, JSON.stringify(m).slice(0, 200));
      const n = await other.network.get();
      assert.ok(n.policy.egress);
    } finally {
      await other.kill();
    }
    const gone = await other.refresh().catch((e) => (e.isNotFound() ? { state: "destroyed" } : Promise.reject(e)));
    assert.equal(gone.state, "destroyed");
  });
});

describe("exec", () => {
  test("text output and env", async () => {
    const r = await sb.exec(["sh", "-c", "echo $GREETING; echo oops >&2; exit 3"]);
    assert.equal(r.exit_code, 3);
    assert.equal(r.stdout, "hi\n");
    assert.equal(r.stderr, "oops\n");
    assert.deepEqual(r.stdoutBytes, enc.encode("hi\n"));
    assert.equal("stdout_encoding" in r, false);
  });

  test("output that is not UTF-8 comes back byte for byte", async () => {
    const r = await sb.exec(["printf", "\\377\\376ok"]);
    assert.equal(r.exit_code, 0);
    assert.deepEqual([...r.stdoutBytes], [0xff, 0xfe, 0x6f, 0x6b]);
    assert.equal(r.stdout, "\ufffd\ufffdok");
    const b = await sb.exec({ cmd: ["printf", "plain"], output_encoding: "base64" });
    assert.equal(b.stdout, "plain");
    assert.deepEqual(b.stdoutBytes, enc.encode("plain"));
  });

  test("root: the command runs as root inside the sandbox", async () => {
    assert.equal((await sb.exec({ cmd: ["id", "-u"], root: true })).stdout, "0\n");
    assert.notEqual((await sb.exec(["id", "-u"])).stdout, "0\n");
  });

  test("a missing program is an exit code, not an error", async () => {
    const r = await sb.exec(["/no/such/program"]);
    assert.equal(r.exit_code, 127);
    assert.ok(r.error);
  });

  test("a streamed exec arrives in order, exit last", async () => {
    const st = await sb.execStream({
      cmd: ["sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 0.05; done; printf '\\377' >&2; exit 4"],
    });
    const events = [];
    for await (const ev of st) events.push(ev);
    assert.equal(events.at(-1).type, "exit");
    assert.equal(events.filter((e) => e.type === "exit").length, 1);
    assert.equal(st.result.exit_code, 4);
    const out = events.filter((e) => e.type === "stdout").map((e) => dec.decode(e.data)).join("");
    assert.equal(out, "1\n2\n3\n4\n5\n");
    const err = events.filter((e) => e.type === "stderr").flatMap((e) => [...e.data]);
    assert.deepEqual(err, [0xff]);
    assert.ok(events.filter((e) => e.type === "stdout").length >= 2, "output streamed in several chunks");

    const c = await (await sb.execStream(["sh", "-c", "printf a; printf b >&2"])).collect();
    assert.equal(c.stdout, "a");
    assert.equal(c.stderr, "b");
    assert.equal(c.exit_code, 0);
  });

  test("an AbortSignal ends a stream, close() ends it quietly", async () => {
    const ctrl = new AbortController();
    const st = await sb.execStream(["sleep", "30"], { signal: ctrl.signal });
    setTimeout(() => ctrl.abort(), 200);
    const t0 = Date.now();
    await within(5000, assert.rejects((async () => { for await (const _ of st); })(), { name: "AbortError" }), "abort");
    assert.ok(Date.now() - t0 < 5000);

    const st2 = await sb.execStream(["sleep", "30"]);
    setTimeout(() => st2.close(), 200);
    const seen = [];
    await within(5000, (async () => { for await (const ev of st2) seen.push(ev); })(), "close");
    assert.equal(st2.result, undefined);
  });
});

describe("processes", () => {
  test("output resumed from a cursor", async () => {
    const p = await sb.processes.start({ cmd: ["sh", "-c", "printf abc; sleep 0.3; printf def >&2; sleep 0.2; printf ghi"], tag: "resume" });
    assert.ok(p.pid > 0);
    assert.equal(p.tag, "resume");
    const first = await sb.processes.output(p.pid);
    let got = "";
    for await (const ev of first) {
      got += dec.decode(ev.data);
      break; // a broken connection, after the first event
    }
    assert.ok(got.length > 0 && "abcdefghi".startsWith(got), got);
    assert.equal(first.cursor, got.length);

    const second = await sb.processes.output(p.pid, { cursor: first.cursor });
    const rest = [];
    for await (const ev of second) rest.push(ev);
    assert.equal(rest.at(-1).type, "exit");
    assert.equal(rest.at(-1).process.exit_code, 0);
    const types = rest.filter((e) => e.data.length).map((e) => [e.type, e.offset, dec.decode(e.data)]);
    assert.equal(got + types.map((t) => t[2]).join(""), "abcdefghi");
    assert.equal(types[0][1], got.length, "the second stream starts at the cursor");
    assert.ok(types.some(([t, , d]) => t === "stderr" && d === "def"));

    const again = await sb.processes.output(p.pid, { cursor: 6, follow: false });
    let tail = "";
    for await (const ev of again) tail += dec.decode(ev.data);
    assert.equal(tail, "ghi");
  });

  test("stdin, wait, get, list, signal", async () => {
    const cat = await sb.processes.start(["cat"]);
    await sb.processes.stdin(cat.pid, "hello ", {});
    await sb.processes.stdin(cat.pid, enc.encode("world"), { close: true });
    const done = await sb.processes.wait(cat.pid, { timeoutMs: 10_000 });
    assert.equal(done.running, false);
    assert.equal(done.exit_code, 0);
    let out = "";
    for await (const ev of await sb.processes.output(cat.pid)) out += dec.decode(ev.data);
    assert.equal(out, "hello world");

    const sleeper = await sb.processes.start(["sleep", "60"]);
    assert.ok((await sb.processes.list()).some((q) => q.pid === sleeper.pid && q.running));
    await sb.processes.signal(sleeper.pid, "KILL");
    const killed = await sb.processes.wait(sleeper.pid, { timeoutMs: 10_000 });
    assert.equal(killed.running, false);
    assert.equal(killed.signal, "SIGKILL");
    assert.equal((await sb.processes.get(sleeper.pid)).pid, sleeper.pid);
  });
});

describe("files", () => {
  test("round trip: text, binary, streams, stat, list, mkdir, move, remove", async () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const info = await sb.files.write("dir/bin.dat", all, { mode: "0600" });
    assert.equal(info.size, 256);
    assert.equal(info.mode, "0600");
    assert.deepEqual(await sb.files.read("dir/bin.dat"), all);

    await sb.files.write("dir/hello.txt", "héllo\n");
    assert.equal(await sb.files.readText("dir/hello.txt"), "héllo\n");

    const big = new Uint8Array(3 << 20).map((_, i) => (i * 7) & 0xff);
    const body = new ReadableStream({
      start(c) {
        for (let o = 0; o < big.length; o += 1 << 20) c.enqueue(big.subarray(o, o + (1 << 20)));
        c.close();
      },
    });
    assert.equal((await sb.files.write("dir/big.dat", body)).size, big.length);
    assert.deepEqual(await sb.files.read("dir/big.dat"), big);

    assert.equal((await sb.files.stat("dir")).type, "dir");
    assert.deepEqual((await sb.files.list("dir")).map((f) => f.name).sort(), ["big.dat", "bin.dat", "hello.txt"]);
    assert.equal((await sb.files.mkdir("a/b/c")).type, "dir");
    assert.equal((await sb.files.move("dir/hello.txt", "a/b/c/hello.txt")).path.endsWith("a/b/c/hello.txt"), true);
    await assert.rejects(sb.files.move("dir/bin.dat", "a/b/c/hello.txt"), (e) => e.code === "file_exists");
    await sb.files.remove("dir/bin.dat");
    await assert.rejects(sb.files.read("dir/bin.dat"), (e) => e.isNotFound() && e.code === "file_not_found");
    await assert.rejects(sb.files.remove("a"), (e) => e.isConflict());
    await sb.files.remove("a", { recursive: true });
    await assert.rejects(sb.files.stat("a"), (e) => e.isNotFound());
  });

  test("tar upload and download", async () => {
    const local = await mkdtemp(join(tmpdir(), "hutch-sdk-tar-"));
    try {
      await mkdir(join(local, "src", "sub"), { recursive: true });
      await writeFile(join(local, "src", "a.txt"), "alpha");
      await writeFile(join(local, "src", "sub", "b.bin"), Buffer.from([0, 1, 2, 255]));
      await run("tar", ["-C", join(local, "src"), "-cf", join(local, "up.tar"), "."]);
      const res = await sb.files.uploadTar("project", await readFile(join(local, "up.tar")));
      assert.equal(res.files, 2);
      assert.equal(await sb.files.readText("project/a.txt"), "alpha");
      assert.deepEqual([...(await sb.files.read("project/sub/b.bin"))], [0, 1, 2, 255]);

      const chunks = [];
      for await (const c of await sb.files.downloadTar("project")) chunks.push(c);
      await writeFile(join(local, "down.tar"), Buffer.concat(chunks));
      await mkdir(join(local, "out"));
      await run("tar", ["-C", join(local, "out"), "-xf", join(local, "down.tar")]);
      assert.equal(await readFile(join(local, "out", "a.txt"), "utf8"), "alpha");
      assert.deepEqual([...(await readFile(join(local, "out", "sub", "b.bin")))], [0, 1, 2, 255]);
    } finally {
      await rm(local, { recursive: true, force: true });
    }
  });

  test("a watch sees a write", async () => {
    await sb.files.mkdir("watched");
    const w = await sb.files.watch("watched", { recursive: true });
    const seen = [];
    const reading = (async () => {
      for await (const ev of w) {
        seen.push(ev);
        if (ev.path === "new.txt") return ev;
      }
    })();
    await sb.files.write("watched/new.txt", "x");
    const ev = await within(10_000, reading, "watch");
    // An atomic write shows as a temporary file renamed into place.
    assert.ok(ev && ["create", "write", "rename"].includes(ev.type), JSON.stringify(seen));
    w.close();
    await assert.rejects(sb.files.watch("no-such-dir"), (e) => e.code === "file_not_found");
  });
});

describe("terminal", () => {
  test("a shell on a PTY over a WebSocket", async () => {
    const term = await sb.terminal({ cmd: ["sh"], rows: 30, cols: 100 });
    assert.ok(term.process.pid > 0);
    assert.equal(term.process.pty, true);
    term.resize({ rows: 40, cols: 120 });
    term.write("stty size; echo hi-$((40+2)); exit 7\n");
    let out = "";
    let exit;
    await within(15_000, (async () => {
      for await (const m of term) {
        if (m.data) out += dec.decode(m.data);
        else if (m.message.type === "exit") exit = m.message.process;
      }
    })(), "terminal");
    assert.match(out, /hi-42/);
    assert.match(out, /40 120/);
    assert.equal(exit?.exit_code, 7);
  });
});

describe("secrets", () => {
  test("values never come back", async () => {
    const value = "s3cr3t-" + Math.random().toString(36).slice(2);
    const created = await hutch.secrets.create({ name: "SDK_TS_SECRET", value, description: "test" });
    assert.equal(created.name, "SDK_TS_SECRET");
    assert.equal(created.value_bytes, value.length);
    const replaced = await hutch.secrets.replace("SDK_TS_SECRET", { value: value + "-2" });
    const got = await hutch.secrets.get("SDK_TS_SECRET");
    const list = await hutch.secrets.list();
    for (const x of [created, replaced, got, list]) assert.ok(!JSON.stringify(x).includes(value), JSON.stringify(x));
    assert.ok(list.some((s) => s.name === "SDK_TS_SECRET"));
    await assert.rejects(hutch.secrets.create({ name: "SDK_TS_SECRET", value }), (e) => e.code === "secret_exists");
    await hutch.secrets.delete("SDK_TS_SECRET");
    await assert.rejects(hutch.secrets.get("SDK_TS_SECRET"), (e) => e.code === "secret_not_found");
  });

  test("a registry secret is bound to its host", async () => {
    const reg = await hutch.secrets.create({ name: "SDK_TS_REGISTRY", value: "pw", kind: "registry", registry: "docker.io" });
    assert.equal(reg.kind, "registry");
    assert.equal(reg.registry, "index.docker.io");
    await assert.rejects(
      hutch.secrets.create({ name: "SDK_TS_BAD", value: "pw", kind: "registry" }),
      (e) => e.code === "invalid_secret_kind",
    );
    await hutch.secrets.delete("SDK_TS_REGISTRY");
  });
});

describe("events", () => {
  test("followed until sandbox.destroyed, resumable, and paged", async () => {
    const doomed = await hutch.sandboxes.create();
    const stream = await doomed.events.follow();
    const types = [];
    const reading = (async () => {
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === "sandbox.destroyed") return;
      }
    })();
    await doomed.exec(["true"]);
    await doomed.kill();
    await within(15_000, reading, "events");
    assert.equal(types[0], "sandbox.created");
    assert.equal(types.at(-1), "sandbox.destroyed");
    assert.ok(stream.closed, "the loop's end closed the stream");

    // Resuming after the created event gives the rest, nothing before.
    const page = await doomed.events.list({ limit: 1 });
    assert.equal(page.events.length, 1);
    assert.ok(page.next_cursor);
    const resumed = await hutch.events.follow({ sandbox: doomed.id, after: page.events[0].id });
    const rest = [];
    for await (const ev of resumed) {
      assert.equal(ev.sandbox_id, doomed.id);
      rest.push(ev.type);
      if (ev.type === "sandbox.destroyed") break;
    }
    assert.deepEqual(rest, types.slice(1));

    const all = [];
    for await (const ev of doomed.events.all({ limit: 2 })) all.push(ev.type);
    assert.deepEqual(all, types);
    const filtered = await hutch.events.list({ sandbox: doomed.id, types: ["sandbox.destroyed"] });
    assert.deepEqual(filtered.events.map((e) => e.type), ["sandbox.destroyed"]);
  });
});

describe("apps", () => {
  test("static preset: create and wait, a task and its log, undo, promote", async () => {
    const app = await hutch.apps.create({ name: "sdk-ts-static", preset: "static" }, { wait: true });
    assert.equal(app.state, "ready", app.error);

    const task = await hutch.apps.createTask(app.id, [
      "sh", "-c", "sed -i 's/Hello from hutch/Hello from the TypeScript SDK/' public/index.html && echo edited",
    ]);
    const log = await hutch.apps.taskLog(app.id, task.id);
    const entries = [];
    for await (const e of log) entries.push(e);
    assert.ok(log.task, "the log ends with the task");
    assert.equal(log.task.status, "succeeded", JSON.stringify(log.task));
    assert.ok(entries.some((e) => e.stream === "stdout" && e.text.includes("edited")), JSON.stringify(entries));
    assert.ok(entries.every((e, i) => i === 0 || e.seq > entries[i - 1].seq));
    assert.ok(log.task.files_changed.some((f) => f.path === "public/index.html"), JSON.stringify(log.task.files_changed));
    assert.equal((await hutch.apps.waitTask(app.id, task.id)).status, "succeeded");

    // The log again, resumed after its first chunk.
    const again = await hutch.apps.taskLog(app.id, task.id, { after: entries[0].seq });
    const rest = [];
    for await (const e of again) rest.push(e);
    assert.deepEqual(rest, entries.slice(1));

    const dev = hutch.sandbox(log.task && (await hutch.apps.get(app.id)).dev);
    assert.match(await dev.files.readText("public/index.html"), /Hello from the TypeScript SDK/);
    const undone = await hutch.apps.undo(app.id);
    assert.ok(undone.changes.some((c) => c.path === "public/index.html"), JSON.stringify(undone));
    assert.match(await dev.files.readText("public/index.html"), /Hello from hutch/);

    const promoted = await hutch.apps.promote(app.id);
    assert.ok(promoted.app.live, JSON.stringify(promoted));
    assert.ok(promoted.checks.length > 0);
    assert.ok((await hutch.apps.list()).some((a) => a.id === app.id));
    const evs = [];
    for await (const e of hutch.apps.events(app.id).all()) evs.push(e.type);
    assert.ok(evs.length > 0);
  });
});
