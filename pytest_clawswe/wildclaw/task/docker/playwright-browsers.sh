#!/bin/sh
# Make Debian's Chromium the browser Playwright (the Python package) installs: its browsers folder gets
# chromium-<rev>/ and chromium_headless_shell-<rev>/ holding the executable path Playwright looks for
# (a link to /usr/lib/chromium/chromium) and the INSTALLATION_COMPLETE marker, so
# `playwright install chromium` finds it installed (no download) and launch() starts Debian's build;
# ffmpeg-<rev>/ (which that command installs too, for video recording) links Debian's ffmpeg.
set -eu
root=${PLAYWRIGHT_BROWSERS_PATH:?}
pkg=$(python3 -c 'import playwright, os; print(os.path.dirname(playwright.__file__))')/driver/package
rev() { python3 -c "import json,sys; print(next(b['revision'] for b in json.load(open('$pkg/browsers.json'))['browsers'] if b['name']=='$1'))"; }
link() {  # link FOLDER SUBPATH [TARGET]
  mkdir -p "$root/$1/$(dirname "$2")"
  ln -sf "${3:-/usr/lib/chromium/chromium}" "$root/$1/$2"
  : > "$root/$1/INSTALLATION_COMPLETE"
}
link "chromium-$(rev chromium)" chrome-linux64/chrome
link "chromium_headless_shell-$(rev chromium-headless-shell)" chrome-headless-shell-linux64/chrome-headless-shell
link "ffmpeg-$(rev ffmpeg)" ffmpeg-linux /usr/bin/ffmpeg
