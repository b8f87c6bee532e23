#!/bin/bash
# Reference solution: cut with ffmpeg, tile six frames (2 per second over 3 s) into a 3x2 sheet, ask the
# vision model about the sheet through the task's OPENROUTER_* variables.
# (each command is one tool call in a fresh shell: absolute paths, no `cd` carried over)
mkdir -p /tmp_workspace/results
ffmpeg -loglevel error -y -ss 4 -i /tmp_workspace/footage.mp4 -t 3 -c:v libx264 -pix_fmt yuv420p -c:a aac \
  /tmp_workspace/results/clip.mp4
ffmpeg -loglevel error -y -i /tmp_workspace/results/clip.mp4 -vf "fps=2,tile=3x2" -frames:v 1 \
  /tmp_workspace/results/contact_sheet.png
python3 - <<'PY'
import base64, json, os, urllib.request

# Hermes scrubs provider keys (OPENROUTER_API_KEY among them) from its terminal's environment; the
# container's own environment still has the task's variables, so read them from there when missing.
env = dict(os.environ)
try:
    env = {**dict(v.split("=", 1) for v in open("/proc/1/environ").read().split("\0") if "=" in v), **env}
except OSError:
    pass
image = base64.b64encode(open("/tmp_workspace/results/contact_sheet.png", "rb").read()).decode()
body = {"model": "openai/gpt-5.4", "messages": [{"role": "user", "content": [
    {"type": "text", "text": "What is in this contact sheet?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + image}}]}]}
req = urllib.request.Request(env["OPENROUTER_BASE_URL"].rstrip("/") + "/chat/completions",
                             json.dumps(body).encode(), {"Content-Type": "application/json",
                                                         "Authorization": "Bearer " + env["OPENROUTER_API_KEY"]})
with urllib.request.urlopen(req, timeout=60) as r:
    answer = json.load(r)["choices"][0]["message"]["content"]
open("/tmp_workspace/results/description.txt", "w").write(answer + "\n")
print(answer)
PY
