// Starts a real `hutch serve` for the tests: builds the binaries from the
// repository (three levels up), serves on a free port with a temporary data
// directory, and tears everything down at the end.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository's root: sdk/typescript/test is three levels below it. */
export const repoRoot = resolve(fileURLToPath(new URL(".", import.meta.url)), "..", "..", "..");

/**
 * Builds hutch and hutch-agent, starts `hutch serve`, and returns its URL,
 * the admin key and stop(), which destroys every sandbox and app it can list
 * and SIGTERMs the server.
 */
export async function startServer() {
  const bin = await mkdtemp(join(tmpdir(), "hutch-sdk-bin-"));
  const data = await mkdtemp(join(tmpdir(), "hutch-sdk-data-"));
  await run("go", ["build", "-o", bin + "/", "./cmd/hutch", "./cmd/hutch-agent"], {
    cwd: repoRoot,
    env: { ...process.env, CGO_ENABLED: "0" },
    maxBuffer: 16 << 20,
  });
  const env = { ...process.env, HUTCH_API_KEY: "", HUTCH_URL: "" };
  const child = spawn(join(bin, "hutch"), ["serve", "--listen", "127.0.0.1:0", "--data", data], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const log = [];
  const addr = await new Promise((resolveAddr, reject) => {
    const timer = setTimeout(() => reject(new Error("hutch serve did not start in 60 s:\n" + log.join("\n"))), 60_000);
    child.on("exit", (code) => reject(new Error(`hutch serve exited (${code}):\n` + log.join("\n"))));
    createInterface({ input: child.stderr }).on("line", (line) => {
      if (log.length < 200) log.push(line);
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        return;
      }
      if (rec.msg === "hutch serving" && rec.addr) {
        clearTimeout(timer);
        resolveAddr(rec.addr);
      }
    });
  });
  const apiKey = (await readFile(join(data, "admin.key"), "utf8")).trim();
  const baseUrl = `http://${addr}`;

  async function stop(hutch) {
    try {
      if (hutch) {
        for (const app of await hutch.apps.list().catch(() => [])) await hutch.apps.delete(app.id).catch(() => {});
        for await (const sb of hutch.sandboxes.list()) {
          if (sb.state !== "destroyed") await hutch.sandboxes.delete(sb.id).catch(() => {});
        }
      }
    } finally {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
      await rm(bin, { recursive: true, force: true });
      await rm(data, { recursive: true, force: true }).catch(() => {});
    }
  }
  return { baseUrl, apiKey, stop };
}
