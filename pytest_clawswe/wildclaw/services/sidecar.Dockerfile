# The WildClawBench services sidecar: Debian's Python plus aiohttp, PyYAML and rank_bm25 from PyPI, and our
# service code. It runs in the agent container's network namespace only; nothing of it is in the agent's.
FROM debian:bookworm-slim
ARG DEBIAN_MIRROR
ARG PIP_INDEX_URL
ARG PIP_PACKAGES
COPY ca.pem /tmp/ca.pem
RUN if [ -n "$DEBIAN_MIRROR" ]; then \
      sed -i "s#^URIs: http://deb.debian.org/debian\$#URIs: ${DEBIAN_MIRROR%/}#" /etc/apt/sources.list.d/debian.sources; fi \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/wcs \
 && if [ -s /tmp/ca.pem ]; then export PIP_CERT=/tmp/ca.pem; fi \
 && /opt/wcs/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_INDEX_URL:+--index-url "$PIP_INDEX_URL"} $PIP_PACKAGES \
 && rm -f /tmp/ca.pem
RUN useradd --system --uid 10001 --no-create-home wcs && mkdir -p /srv/fixtures /srv/audit && chown wcs /srv/audit
COPY mock/ /opt/wcs/app/mock/
RUN /opt/wcs/bin/python -m compileall -q /opt/wcs/app/mock
WORKDIR /opt/wcs/app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER wcs
ENTRYPOINT ["/opt/wcs/bin/python", "-m", "mock.app", "--config", "/srv/config.json", "--fixtures", "/srv/fixtures", "--audit-dir", "/srv/audit"]
