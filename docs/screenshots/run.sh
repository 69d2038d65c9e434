#!/usr/bin/env bash
# axe-core over the site's main pages (1280 px and 400 px), and screenshots of four of them (1280 px).
#   bash docs/screenshots/run.sh            # builds ki (debug) first
#   BIN=target/release/ki bash docs/screenshots/run.sh
# Serves a fresh SQLite catalog (the bundled snapshot, imported on first start), writes
# docs/screenshots/<page>-1280.webp (shoot.mjs's PHOTOGRAPHED) and docs/screenshots/axe.md, and exits non-zero on
# any serious or critical axe violation (or a page wider than its viewport).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

AXE_VERSION=4.14.1
# The npm registry's integrity of axe-core-4.14.1.tgz.
AXE_INTEGRITY="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[ -n "$CHROMIUM" ] || { echo "no chromium on PATH (apt-get install -y chromium)" >&2; exit 2; }
command -v node >/dev/null || { echo "node (>= 20) is needed for the DevTools protocol" >&2; exit 2; }

if [ -z "${BIN:-}" ]; then
  cargo build -p ki
  BIN="${CARGO_TARGET_DIR:-target}/debug/ki"
fi

work="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# axe-core is fetched, checked against its pinned integrity, and never committed.
(cd "$work" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null)
tarball="$work/axe-core-$AXE_VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
[ "$actual" = "$AXE_INTEGRITY" ] || { echo "axe-core tarball integrity $actual, expected $AXE_INTEGRITY" >&2; exit 1; }
tar -xzf "$tarball" -C "$work" package/axe.min.js

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BIN" serve --database "sqlite://$work/kernelindex.db" --addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 720); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.25
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { echo "ki serve did not start" >&2; exit 1; }

node --experimental-websocket "$here/shoot.mjs" "http://127.0.0.1:$port" "$here" "$work/package/axe.min.js" "$CHROMIUM"
