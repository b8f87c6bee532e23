#!/bin/sh
# pip-install $PACKAGES into a copy of the bundled CPython, then write bin/ wrappers.
# With lock/requirements.lock (the recipe's lock): exactly the pinned versions, hash-checked.
set -eu
b=$BUNDLE_DIR
mkdir -p "$b"
cp -a /opt/clawswe/python "$b/python"
# Their shebangs name the runtime image's prefix, not this copy.
rm -f "$b"/python/bin/pip*
if [ -f /clawswe/bundle/lock/requirements.lock ]; then
  "$b/python/bin/python3" -m pip install --no-warn-script-location --require-hashes \
    -r /clawswe/bundle/lock/requirements.lock
else
  "$b/python/bin/python3" -m pip install --no-warn-script-location $PACKAGES
fi
sh /clawswe/bundle/bundle-libs.sh "$b" "$b/python/lib"
sh /clawswe/bundle/make-wrappers.sh python $ENTRY_POINTS
