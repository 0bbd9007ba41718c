// The workflow bundle, built once per source: `@workflow/vitest`'s `buildWorkflowTests` (the
// builder of `@workflow/builders`: esbuild with the SWC plugin) compiles `chart.js` into
// `workflows.mjs` (the `"use workflow"` code, run in core's VM) and `steps.mjs` (the steps,
// run in the adapter's realm), which import the SDK's packages from `adapters/node/node_modules`.
//
// The bundle lives in `.build/<hash>/` beside this file (never in a store directory), keyed by
// the hash of the sources and the versions of the packages that compile them. Two adapter
// processes may start at once (`ward run --jobs 2`): each builds in a directory of its own and
// renames it into place; the rename of the second finds the first's and gives way.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The sources compiled into the bundle, beside this file. */
const SOURCES = ["chart.js"];

/** The packages whose versions shape the bundle. */
const PACKAGES = ["workflow", "@workflow/ai", "@workflow/vitest", "@workflow/builders", "@workflow/swc-plugin", "ai", "@cfworker/json-schema"];

export function bundleKey() {
  const hash = createHash("sha256");
  for (const source of SOURCES) hash.update(source).update("\0").update(readFileSync(join(here, source))).update("\0");
  for (const name of PACKAGES) {
    let version = "absent";
    try {
      version = JSON.parse(readFileSync(join(here, "..", "node_modules", name, "package.json"), "utf8")).version;
    } catch {
      // a package that does not export its package.json: its absence changes nothing here
    }
    hash.update(`${name}@${version}\0`);
  }
  return hash.digest("hex").slice(0, 16);
}

const built = (target) => existsSync(join(target, "steps.mjs")) && existsSync(join(target, "workflows.mjs"));

/**
 * The directory of the built bundle (`workflows.mjs`, `steps.mjs`), built when missing, in a
 * child process: the builder imports the SDK's runtime modules, which the adapter's process
 * must import only after it has faked its clocks and put its `ulid` in place.
 */
export function ensureBundle() {
  const target = join(here, ".build", bundleKey());
  if (built(target)) return target;
  execFileSync(process.execPath, [fileURLToPath(import.meta.url)], { stdio: ["ignore", "ignore", "inherit"] });
  if (!built(target)) throw new Error(`the workflow bundle was not built in ${target}`);
  return target;
}

/** Builds the bundle (run as a script by `ensureBundle`). */
async function build() {
  const root = join(here, ".build");
  const target = join(root, bundleKey());
  if (built(target)) return;
  mkdirSync(root, { recursive: true });
  // The bundle imports the SDK's files by paths relative to itself: it is built at the depth
  // of its final directory (`.build/<name>/`), then renamed.
  const stamp = `${process.pid}-${Date.now()}`;
  const source = join(root, `src-${stamp}`);
  const staged = join(root, `tmp-${stamp}`);
  mkdirSync(source, { recursive: true });
  for (const file of SOURCES) cpSync(join(here, file), join(source, file));
  const { buildWorkflowTests } = await import("@workflow/vitest");
  const log = console.log;
  console.log = (...args) => process.stderr.write(`${args.join(" ")}\n`);
  try {
    await buildWorkflowTests({ cwd: source, outDir: staged, dataDir: join(source, "data") });
  } finally {
    console.log = log;
  }
  try {
    renameSync(staged, target);
  } catch (error) {
    if (!existsSync(join(target, "steps.mjs"))) throw error;
    rmSync(staged, { recursive: true, force: true });
  }
  // The sources' copy, SWC's cache and the builder's data directory go.
  rmSync(source, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build();
