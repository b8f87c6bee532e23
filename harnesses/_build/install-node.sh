#!/bin/sh
# Install $PACKAGES from npm beside a copy of the Node runtime, then write bin/ wrappers.
# With lock/package-lock.json (the recipe's lock): exactly what it pins, integrity-checked (npm ci).
set -eu
b=$BUNDLE_DIR
mkdir -p "$b/app"
cp -a /opt/clawswe/node "$b/node"
rm -rf "$b/node/include"
cd "$b/app"
if [ -f /clawswe/bundle/lock/package-lock.json ]; then
  cp /clawswe/bundle/lock/package.json /clawswe/bundle/lock/package-lock.json .
  npm ci --no-audit --no-fund
else
  echo '{"name": "clawswe-bundle", "private": true}' > package.json
  npm install --no-audit --no-fund $PACKAGES
fi
# npm 11 holds back install scripts until approved; approve the harness's own and run them.
npm install-scripts approve --all
npm rebuild
sh /clawswe/bundle/bundle-libs.sh "$b" "$b/node/lib"
sh /clawswe/bundle/make-wrappers.sh node $ENTRY_POINTS
