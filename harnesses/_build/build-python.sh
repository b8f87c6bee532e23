#!/bin/sh
# Compile CPython $PY_VERSION into /opt/clawswe/python (no PGO/LTO, no test suite: build time matters more
# than the last few percent of speed), then make the tree self-contained.
set -eu
prefix=/opt/clawswe/python
mirror=${DEBIAN_MIRROR:-$(grep -ho 'https\?://[^ ]*' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | head -n1)}
mkdir -p /tmp/py && cd /tmp/py
curl -fsSL --retry 3 -o src.tar.xz "${mirror%/}/$PY_SOURCE"
echo "$PY_SHA256  src.tar.xz" | sha256sum -c -
tar xJf src.tar.xz --strip-components=1
# Bundled libmpdec and expat are linked statically into their modules: one less library to carry.
./configure -q --prefix="$prefix" --with-ensurepip=install --disable-test-modules \
    --without-system-libmpdec --without-system-expat
start=$(date +%s)
make -s -j"$(nproc)" >/dev/null
make -s install >/dev/null
echo "clawswe: CPython $PY_VERSION compiled in $(( $(date +%s) - start )) s"
cd / && rm -rf /tmp/py

ver=${PY_VERSION%.*}
lib=$prefix/lib/python$ver
# Not needed to run harnesses: the static libpython (for embedding), IDLE, turtle demos.
rm -rf "$lib"/config-*/libpython*.a "$lib"/idlelib "$lib"/turtledemo "$lib"/tkinter
find "$prefix" -name '*.so' -exec strip --strip-unneeded {} +
strip "$prefix/bin/python$ver"
sh /clawswe/bundle-libs.sh "$prefix" "$prefix/lib"
"$prefix/bin/python3" -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, decimal, uuid, curses, pyexpat; print(ssl.OPENSSL_VERSION)"
