"""Codex's image helper, as the released Codex runner sets it up: when a task looks like it involves images, a
script at /tmp_workspace/.wildclaw_image.py (ours: wildclaw_image.py next to this file) that asks a vision model
with a plain chat-completions call, and an `## Image Helper` prompt section telling the agent to use it instead of
Codex's own image input (the released runner's reason: that goes through the Responses API, which some OpenRouter
models reject with a fatal error). In our runs its OPENROUTER_* variables are the gateway and the task's tools
token, so the gateway answers it (scripted runs: the task's vision fixtures)."""
from __future__ import annotations

import json
from pathlib import Path

from pytest_clawswe.engine.workspace import BaseWorkspace

SCRIPT = Path(__file__).with_name("wildclaw_image.py")
NAME = ".wildclaw_image.py"
# the released markers: image file suffixes and words, looked for in the lower-cased prompt
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
IMAGE_WORDS = ("image", "photo", "picture", "screenshot", "diagram")
# the variables the helper reads, which the released runner gives Codex's container for every task
ENV = ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL")
_DEFAULT_LINE = 'DEFAULT_MODEL = ""  # the task\'s model, set when installed\n'

# our words for what the released section says
SECTION = """## Image Helper

When you need to understand an image, use the helper below instead of Codex's built-in image input: do not call \
the `view_image` tool and do not attach images to the model, since that path (the /responses API) can fail with \
this OpenRouter setup:

```bash
python3 /tmp_workspace/.wildclaw_image.py "<image_path>" "<question>"
```

The helper prints JSON and exits 0 even when the image model's call fails; it asks the task's model unless told \
otherwise. Use it at most twice in this task. Do not give the model an image any other way (built-in image input, \
`view_image`, `--image`, `input_image`, file:// image URLs). If it answers ok=false because the model or the \
endpoint cannot take the request, you may send a /chat/completions request to OpenRouter yourself, with \
OPENROUTER_API_KEY, OPENROUTER_BASE_URL and a model that reads images; otherwise go on with other means and still \
write the required output files. Once they are written, finish rather than checking the images again."""


def wanted(prompt: str, exec_dir: Path) -> bool:
    """As released: the prompt names an image suffix or word, or the task's exec/ folder holds an image file."""
    lowered = prompt.lower()
    if any(marker in lowered for marker in (*IMAGE_SUFFIXES, *IMAGE_WORDS)):
        return True
    try:
        return any(p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES for p in exec_dir.rglob("*"))
    except OSError:
        return False


def script(model: str) -> str:
    """The helper's text with its default model (the task's: an `openrouter/` prefix dropped)."""
    text = SCRIPT.read_text()
    if _DEFAULT_LINE not in text:
        raise RuntimeError(f"{SCRIPT} has no default model line to set")  # our file changed: a bug of ours
    bare = model.split("/", 1)[1] if model.startswith("openrouter/") else model
    return text.replace(_DEFAULT_LINE, f"DEFAULT_MODEL = {json.dumps(bare)}\n", 1)


def install(ws: BaseWorkspace, workdir: str, model: str) -> None:
    """The helper at `workdir`/.wildclaw_image.py, executable (before the agent starts)."""
    ws.write_file(f"{workdir}/{NAME}", script(model), mode=0o755)
