# Usage: sh -c "$(cat check-libs.sh)" check DIR   -- run inside the image to check against.
# Print each library that an ELF file of the bundle at DIR would load from outside DIR (other than
# glibc's) or can't find at all. Prints nothing when the bundle needs nothing from this image but glibc.
dir=$1
glibc=' linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2 libanl.so.1 '
find "$dir" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' -o -name '*.node' \) | while IFS= read -r f; do
  ldd "$f" 2>/dev/null | while read -r so arrow path rest; do
    [ "$arrow" = "=>" ] || continue
    case "$glibc" in *" $so "*) continue ;; esac
    case "$path" in "$dir"/*) continue ;; esac
    if [ "$path" != not ]; then echo "$f: $so from $path"; continue; fi
    # Fine: a wheel's .libs sibling (found through the loading module's rpath), or a part the builder
    # couldn't load either (a package's musl or desktop variant), listed at build time.
    [ -e "$(dirname "$f")/$so" ] && continue
    grep -qxF "${f#"$dir"/} $so" "$dir/.clawswe-unresolved" 2>/dev/null && continue
    echo "$f: $so not found"
  done
done
