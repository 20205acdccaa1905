// Fails when src/generated/api.ts is not what `npm run gen` makes from
// api/openapi.yaml now: run the gen script's command with its output sent to
// a temporary file, and compare.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "hutch-gen-"));
try {
  const out = join(dir, "api.ts");
  const gen = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.gen.split(/\s+/);
  const o = gen.indexOf("-o");
  if (gen[0] !== "openapi-typescript" || o < 0) throw new Error("check-gen: unexpected gen script " + gen.join(" "));
  gen[o + 1] = out;
  execFileSync(join(root, "node_modules", ".bin", gen[0]), gen.slice(1), {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const want = readFileSync(out, "utf8");
  const have = readFileSync(join(root, "src", "generated", "api.ts"), "utf8");
  if (want !== have) {
    console.error("check-gen: src/generated/api.ts is stale; run `npm run gen` and commit it");
    process.exit(1);
  }
  console.log("check-gen: src/generated/api.ts matches api/openapi.yaml");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
