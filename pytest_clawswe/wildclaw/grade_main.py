"""Runs inside the grader container (copied there as /clawswe/grade_main.py; standard library only):
load the task's Automated Checks, read the transcript, call grade(), write the result as JSON.

python3 /clawswe/grade_main.py GRADER_CODE TRANSCRIPT OUT
"""
import json
import sys
import traceback


def main(code_path, transcript_path, out_path):
    try:
        with open(transcript_path, encoding="utf-8") as fh:
            transcript = [json.loads(line) for line in fh if line.strip()]  # every line, as released
        scope = {"__name__": "grader"}
        with open(code_path, encoding="utf-8") as fh:
            exec(compile(fh.read(), "automated_checks.py", "exec"), scope)
        result = scope["grade"](transcript=transcript, workspace_path="/tmp_workspace")
        if not isinstance(result, dict):
            raise TypeError(f"grade() returned {type(result).__name__}, not a dict")
        out = {"ok": True, "result": result}
    except BaseException as exc:  # reported to the runner, which makes the item an error
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, default=str)


if __name__ == "__main__":
    main(*sys.argv[1:4])
