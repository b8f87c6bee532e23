#!/bin/sh
# Usage: bundle-libs.sh DIR LIBDIR
# Copy every shared library that an ELF file under DIR loads from outside DIR (except glibc's own) into
# LIBDIR, and give those files an $ORIGIN-relative rpath to LIBDIR. The tree then takes nothing from the
# image it runs in but glibc. DT_RPATH (not RUNPATH) on purpose: it also applies to the libraries'
# own dependencies and to modules that the program dlopens.
# Libraries the builder lacks too (parts of a package for musl or a desktop) are listed in
# DIR/.clawswe-unresolved: those files can't load anywhere, and a check can tell them from a regression.
set -eu
dir=$(realpath "$1") libdir=$(realpath -m "$2")
glibc=' linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2 libanl.so.1 '
mkdir -p "$libdir"
elfs=$(mktemp)
find "$dir" -type f -print0 | xargs -0 -r file -N --mime-type \
  | awk -F': ' '$2 ~ /application\/x-(sharedlib|executable|pie-executable)/ {print $1}' > "$elfs"
while IFS= read -r f; do
  deps=$(ldd "$f" 2>/dev/null | awk '$2 == "=>" {print $1, $3}') || continue  # static: nothing to do
  patch=
  for so_path in $(echo "$deps" | tr ' ' ':'); do
    so=${so_path%%:*} path=${so_path#*:}
    case "$glibc" in *" $so "*) continue ;; esac
    # A wheel's .libs sibling: found at run time through the rpath of the module that loads it.
    if [ "$path" = not ] && [ -e "$(dirname "$f")/$so" ]; then continue; fi
    if [ "$path" = not ]; then echo "${f#"$dir"/} $so" >> "$dir/.clawswe-unresolved"; continue; fi
    case "$path" in "$dir"/*) continue ;; esac
    [ -e "$libdir/$so" ] || { cp -L "$path" "$libdir/$so"; chmod u+w "$libdir/$so"; echo "bundle-libs: bundled $so"; }
    patch=1
  done
  [ -n "$patch" ] || continue
  rel=$(realpath --relative-to="$(dirname "$f")" "$libdir")
  old=$(patchelf --print-rpath "$f")
  patchelf --force-rpath --set-rpath "${old:+$old:}\$ORIGIN/$rel" "$f"
done < "$elfs"
# The copied libraries find each other next to themselves.
for so in "$libdir"/*.so*; do
  [ -f "$so" ] && [ "$(patchelf --print-rpath "$so" 2>/dev/null)" != '$ORIGIN' ] || continue
  patchelf --force-rpath --set-rpath '$ORIGIN' "$so" 2>/dev/null || true
done
rm -f "$elfs"
if [ -f "$dir/.clawswe-unresolved" ]; then
  sort -u -o "$dir/.clawswe-unresolved" "$dir/.clawswe-unresolved"
  sed 's/^/bundle-libs: unresolved in the builder too: /' "$dir/.clawswe-unresolved"
fi
