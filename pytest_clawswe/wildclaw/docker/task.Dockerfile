# The container a WildClawBench task runs in. Harnesses come from their bundles (lent as volumes), so
# this image holds only what tasks and warmups expect of a plain Linux box: Python 3, git, a shell kit,
# and ffmpeg/ffprobe for the multimodal tasks (video, audio, images without a GPU or network).
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 git ca-certificates curl procps jq file unzip xz-utils \
 && rm -rf /var/lib/apt/lists/*
# a layer of its own: the layer above stays cached
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ffmpeg \
 && rm -rf /var/lib/apt/lists/* \
 && ffprobe -version >/dev/null
ENV LANG=C.UTF-8
RUN mkdir -p /tmp_workspace
WORKDIR /tmp_workspace
STOPSIGNAL SIGKILL
