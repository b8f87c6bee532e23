"""Answers believed only whole: a command's output framed by lines of its own (framed.py), a copy's archive
framed by tar's first member and end marker (archive.py), read once more when cut (reread.py); every archive read
back through one reader of the engine's chunks (chunks.py). Any engine's."""
