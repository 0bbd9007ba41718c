#!/bin/bash -eu
# Builds ward's fuzz targets for ClusterFuzzLite / OSS-Fuzz (libFuzzer, the sanitizer in
# $SANITIZER, address by default) and puts each into $OUT with its seed corpus
# (<target>_seed_corpus.zip, from corpus/<target>/) and dictionary (<target>.dict, from
# corpus/dict/).
#
# Inside the builder image the repository is $SRC/ward. Locally, set $SRC and $OUT and run
# it from anywhere in a checkout (a nightly toolchain and cargo-fuzz needed):
#
#   SRC=/tmp/cfl-src OUT=/tmp/cfl-out bash .clusterfuzzlite/build.sh
#
# The target list must match the [[bin]] entries of fuzz/Cargo.toml (a test checks it).

TARGETS=(redact validate tool_args scenario scenario_json protocol_lines)

if [ -d "$SRC/ward/fuzz" ]; then
  REPO="$SRC/ward"
else
  REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fi
mkdir -p "$OUT"
cd "$REPO"

# Rust has no UndefinedBehaviorSanitizer or MemorySanitizer build here: those runs get
# an uninstrumented build (coverage guidance only); address is the sanitizer this project
# asks for in project.yaml.
case "${SANITIZER:-address}" in
  address) sanitizer=address ;;
  *) sanitizer=none ;;
esac

# The builder image selects its nightly with RUSTUP_TOOLCHAIN; locally, nightly.
export RUSTUP_TOOLCHAIN="${RUSTUP_TOOLCHAIN:-nightly}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

cargo fuzz build -O --sanitizer "$sanitizer"

triple="$(rustc -vV | sed -n 's/^host: //p')"
for target in "${TARGETS[@]}"; do
  cp "fuzz/target/$triple/release/$target" "$OUT/$target"
  rm -f "$OUT/${target}_seed_corpus.zip"
  (cd "corpus/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
  if [ -f "corpus/dict/$target.dict" ]; then
    cp "corpus/dict/$target.dict" "$OUT/$target.dict"
  fi
  echo "built $OUT/$target"
done
