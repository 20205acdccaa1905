// Removes dist/ so a build never ships a file whose source is gone.
import { rmSync } from "node:fs";
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
