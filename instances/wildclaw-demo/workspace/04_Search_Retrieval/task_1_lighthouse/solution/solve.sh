#!/bin/bash
# Reference solution: two queries (of four allowed), read the primary sources, answer.
set -e
mkdir -p /tmp_workspace/results
python3 - <<'PY'
import json, re, urllib.request

def call(path, body):
    req = urllib.request.Request(f"http://localhost:9140{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

call("/search/query", {"query": "Kestrel Point lighthouse automated year", "top_k": 5})
board = call("/search/get", {"doc_id": "kp-board-1988"})["text"]
call("/search/query", {"query": "Kestrel Point last resident keeper", "top_k": 5})
attendant = call("/search/get", {"doc_id": "kp-attendant"})["text"]
year = int(re.search(r"automatic operation in \w+ (\d{4})", board).group(1))
keeper = re.search(r"last resident keeper, ([A-Z]\w+ [A-Z]\w+)", board).group(1)
json.dump({"year": year, "keeper": keeper}, open("/tmp_workspace/results/answer.json", "w"))
open("/tmp_workspace/results/sources.md", "w").write(
    "- kp-board-1988 (Harbour Board report): automated November 1987; last resident keeper Agnes Thorvald.\n"
    "- kp-attendant (lighthouse society): Tom Ellery was an attendant keeper who never lived at the station,\n"
    "  so the travel blog's 1991 / Tom Ellery is wrong.\n")
print(year, keeper)
PY
