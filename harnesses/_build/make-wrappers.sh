#!/bin/sh
# Usage: make-wrappers.sh node|python ENTRY_POINT...
# Write $BUNDLE_DIR/bin/<entry point>: a /bin/sh script that runs the harness with the bundle's own
# runtime, whatever node or python the image has on PATH. The wrappers change no environment variable,
# so the commands the agent runs see the instance's environment unchanged.
set -eu
kind=$1; shift
b=$BUNDLE_DIR
mkdir -p "$b/bin"
for e in "$@"; do
  if [ "$kind" = python ]; then
    target=$b/python/bin/$e
    # -I: ignore the image's PYTHONPATH/PYTHONHOME and user site-packages.
    run="$b/python/bin/python3 -I $target"
  else
    target=$(readlink -f "$b/app/node_modules/.bin/$e")
    if head -n1 "$target" | grep -q '^#!.*node'; then run="$b/node/bin/node $target"; else run=$target; fi
  fi
  [ -f "$target" ] || { echo "make-wrappers: no entry point $e ($target)" >&2; exit 1; }
  printf '#!/bin/sh\nexec %s "$@"\n' "$run" > "$b/bin/$e"
  chmod 0755 "$b/bin/$e"
  echo "make-wrappers: bin/$e -> $run"
done
