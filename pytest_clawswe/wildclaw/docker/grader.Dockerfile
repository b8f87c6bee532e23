# The grader container: the task image plus what released graders import (openai for the judge, Pillow,
# PyMuPDF), installed from wheels fetched on the host, so the build needs no network of its own.
ARG TASK_IMAGE
FROM ${TASK_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-pip \
 && rm -rf /var/lib/apt/lists/*
COPY wheels /tmp/wheels
RUN pip3 install --break-system-packages --no-index --find-links /tmp/wheels openai Pillow PyMuPDF \
 && rm -rf /tmp/wheels \
 && python3 -c "import openai, PIL, fitz"
