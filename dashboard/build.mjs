// Copies the chart library from the npm package pinned in package-lock.json
// (node_modules/uplot, after `npm ci`) into vendor/, which the binary
// embeds (src/dashboard/assets.rs). `--check` copies nothing and fails when
// vendor/ differs from a fresh install: CI runs it (.ci/steps/50-dashboard.sh).
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// [file in the package, name in vendor/]
const FILES = [
  ["dist/uPlot.iife.min.js", "uPlot.iife.min.js"],
  ["dist/uPlot.min.css", "uPlot.min.css"],
  ["LICENSE", "LICENSE"],
];
const check = process.argv.includes("--check");
const pkg = JSON.parse(readFileSync(join(here, "node_modules/uplot/package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(here, "package-lock.json"), "utf8"));
const locked = lock.packages["node_modules/uplot"].version;
if (pkg.version !== locked) {
  console.error(`node_modules has uplot ${pkg.version}, the lockfile ${locked}: run npm ci`);
  process.exit(1);
}
let differ = 0;
mkdirSync(join(here, "vendor"), { recursive: true });
for (const [from, f] of FILES) {
  const fresh = readFileSync(join(here, "node_modules/uplot", from));
  const target = join(here, "vendor", f);
  if (check) {
    let have = null;
    try {
      have = readFileSync(target);
    } catch {
      have = null;
    }
    if (!have || !have.equals(fresh)) {
      console.error(`vendor/${f} differs from uplot ${locked}'s ${from}: run node dashboard/build.mjs`);
      differ += 1;
    }
  } else {
    writeFileSync(target, fresh);
  }
}
if (differ) {
  process.exit(1);
}
console.log(`${check ? "checked" : "copied"} ${FILES.length} files of uplot ${locked} (vendor/)`);
