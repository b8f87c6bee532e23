# Builder image holding Node under /opt/clawswe/node (binary + the libraries it needs but glibc) and npm
# under /opt/clawswe/npm. Node harness bundles start FROM this image and npm-install beside a copy of it.
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl file patchelf \
 && rm -rf /var/lib/apt/lists/*
# The host's trust store (it may hold a proxy's CA) for curl and npm.
COPY ca.pem /clawswe/ca.pem
RUN [ -s /clawswe/ca.pem ] || cp /etc/ssl/certs/ca-certificates.crt /clawswe/ca.pem
ENV CURL_CA_BUNDLE=/clawswe/ca.pem NODE_EXTRA_CA_CERTS=/clawswe/ca.pem npm_config_cafile=/clawswe/ca.pem \
    npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
ARG NPM_REGISTRY=https://registry.npmjs.org
ARG NODE_VERSION
ARG NODE_INTEGRITY
ARG NPM_VERSION
ARG NPM_INTEGRITY
COPY build-node.sh bundle-libs.sh /clawswe/
RUN sh /clawswe/build-node.sh
# node-gyp takes headers from here instead of downloading them.
ENV npm_config_registry=${NPM_REGISTRY} npm_config_nodedir=/opt/clawswe/node
