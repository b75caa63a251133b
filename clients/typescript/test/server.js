// Starts this build's `parallax` binary (PARALLAX_BIN, else the debug build
// in target/) on a free loopback port with the API fixture's rules, an
// agent token and one approver, and stops it when the tests end.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "../../..");
export const AGENT_TOKEN = "agent-token";
export const ALICE_TOKEN = "alice-token";

function binary() {
  const bin = process.env.PARALLAX_BIN || join(REPO, "target/debug/parallax");
  if (!existsSync(bin)) {
    throw new Error(`no parallax binary at ${bin}: run \`cargo build\` or set PARALLAX_BIN`);
  }
  return bin;
}

/** A port nothing listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), "parallax-ts-"));
  const config = join(dir, "parallax.yaml");
  writeFileSync(
    config,
    readFileSync(join(REPO, "tests/fixtures/api/parallax.yaml"), "utf8") +
      `
server:
  host: 127.0.0.1
  auth_token: ${AGENT_TOKEN}
approvals:
  path: ${join(dir, "approvals.db")}
  approver_tokens:
    alice: ${ALICE_TOKEN}
  timeout_seconds: 30
  max_wait_seconds: 10
`,
  );
  const port = await freePort();
  const env = { ...process.env };
  delete env.PARALLAX_AUTH_TOKEN; // the config's token is the one under test
  const child = spawn(binary(), ["serve", "-c", config, "--port", String(port), "--log-level", "warn"], {
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`parallax serve exited: ${stderr}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`parallax serve did not answer /health within 60 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop() {
      child.kill("SIGTERM");
    },
  };
}
