#!/bin/sh
# Install $PACKAGES from npm beside a copy of the Node runtime, then write bin/ wrappers.
set -eu
b=$BUNDLE_DIR
mkdir -p "$b/app"
cp -a /opt/clawswe/node "$b/node"
rm -rf "$b/node/include"
cd "$b/app"
echo '{"name": "clawswe-bundle", "private": true}' > package.json
# npm 11 holds back install scripts until approved; approve the harness's own and run them.
npm install --no-audit --no-fund $PACKAGES
npm install-scripts approve --all
npm rebuild
sh /clawswe/bundle/bundle-libs.sh "$b" "$b/node/lib"
sh /clawswe/bundle/make-wrappers.sh node $ENTRY_POINTS
