// `ulid` as the SDK's modules import it, with one difference: the monotonic factories made
// while the SDK's modules load (world-local's file and stream ids, core's run ids) can be
// started again, as in a fresh process. A monotonic factory keeps the last instant and random
// part it used; ids made at an instant not after it continue from it. The adapter runs one
// execution after another in one process (and drops a runtime in place, P9): without a fresh
// start at each `reset`, the ids of a seed would depend on what the process ran before it
// (I11). The ids themselves are the real `ulid`'s.

import * as real from "ulid-original";

export * from "ulid-original";

const factories = [];
let loading = true;

export function monotonicFactory(prng) {
  let inner = real.monotonicFactory(prng);
  if (loading) factories.push({ restart: () => (inner = real.monotonicFactory(prng)) });
  return (seedTime) => inner(seedTime);
}

/** Starts every factory made while the SDK loaded again; later ones are made per world or per call. */
globalThis[Symbol.for("ward.workflow-devkit.ulid")] = {
  restart() {
    for (const factory of factories) factory.restart();
  },
  loaded() {
    loading = false;
  },
  count: () => factories.length,
};
