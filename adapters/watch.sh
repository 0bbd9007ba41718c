#!/bin/sh
# Runs an adapter and logs the exchange with ward, line by line and in order, to the file
# $WARD_EXCHANGE (default: exchange.log): "→ " before each line ward sent, "← " before each
# line the adapter answered. The protocol is lockstep, so the two sides never interleave.
#
#   ward replay --runtime 'sh adapters/watch.sh ward serve' scenario.json
#   WARD_EXCHANGE=mine.log ward replay --runtime 'sh adapters/watch.sh node my-adapter.js' 3
#
# Diff an adapter's log against `ward serve`'s for the same scenario to see where they part.
log=${WARD_EXCHANGE:-exchange.log}
while IFS= read -r line; do
  printf '→ %s\n' "$line" >>"$log"
  printf '%s\n' "$line"
done | "$@" | while IFS= read -r line; do
  printf '← %s\n' "$line" >>"$log"
  printf '%s\n' "$line"
done
