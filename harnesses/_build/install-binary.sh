#!/bin/sh
# A harness given as one executable file (payload/<entry point>): copied in, with the libraries it links
# (other than glibc) taken from the builder. It must run on the builder's glibc (2.31) or be static.
set -eu
mkdir -p "$BUNDLE_DIR/bin"
for e in $ENTRY_POINTS; do
  cp "/clawswe/bundle/payload/$e" "$BUNDLE_DIR/bin/$e"
  chmod 0755 "$BUNDLE_DIR/bin/$e"
done
sh /clawswe/bundle/bundle-libs.sh "$BUNDLE_DIR" "$BUNDLE_DIR/lib"
