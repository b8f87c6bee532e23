# Builder image holding a CPython under /opt/clawswe/python that needs nothing but glibc from the image
# it later runs in. Python harness bundles start FROM this image and pip-install into a copy of it.
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config curl ca-certificates xz-utils file patchelf \
      libssl-dev libffi-dev libsqlite3-dev liblzma-dev libbz2-dev zlib1g-dev uuid-dev \
      libreadline-dev libncurses-dev \
 && rm -rf /var/lib/apt/lists/*
ARG PY_VERSION
ARG PY_SOURCE
ARG PY_SHA256
ARG DEBIAN_MIRROR
COPY build-python.sh bundle-libs.sh /clawswe/
RUN sh /clawswe/build-python.sh
# Last, so a changed CA bundle doesn't rebuild CPython: the host's trust store (it may hold a proxy's CA)
# for pip inside bundle builds.
COPY ca.pem /clawswe/ca.pem
RUN [ -s /clawswe/ca.pem ] || cp /etc/ssl/certs/ca-certificates.crt /clawswe/ca.pem
ENV PIP_CERT=/clawswe/ca.pem SSL_CERT_FILE=/clawswe/ca.pem CURL_CA_BUNDLE=/clawswe/ca.pem \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
