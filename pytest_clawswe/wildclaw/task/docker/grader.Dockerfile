# The grader container: the task image, which already holds what released graders import (openai for the
# judge, Pillow, PyMuPDF, Playwright with Chromium); kept as its own tag so graders never run in an image a
# user swapped in with --task-image.
ARG TASK_IMAGE
FROM ${TASK_IMAGE}
RUN python3 -c "import openai, PIL, fitz, playwright"
