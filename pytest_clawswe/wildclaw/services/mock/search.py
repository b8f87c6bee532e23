"""Local search over a corpus shipped with the task, with a query budget the service enforces.

Ranking is rank_bm25's BM25Okapi (a well-kept, small library); tokenisation is a plain lowercase word
split. Every query is counted and audited; past the budget a query is refused with 403 and a sentence
saying so, and the refusal is audited too, so graders read the real count, not the agent's word."""
from __future__ import annotations

import json
import re
from pathlib import Path

from rank_bm25 import BM25Okapi

from .services import ApiError, Service, need, preview

_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def load_corpus(folder: Path) -> list[dict]:
    """Documents from corpus.jsonl ({doc_id, title, text, url?}) and/or *.md / *.txt files (title = first line)."""
    docs = []
    jsonl = folder / "corpus.jsonl"
    if jsonl.is_file():
        # split at "\n" only: a document may hold U+2028 and the like, which splitlines() would break at
        for n, line in enumerate(jsonl.read_text(encoding="utf-8").split("\n")):
            if line.strip():
                doc = json.loads(line)
                doc.setdefault("doc_id", f"doc{n + 1:03d}")
                docs.append(doc)
    for path in sorted([*folder.glob("*.md"), *folder.glob("*.txt")]):
        text = path.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip() if text.strip() else path.stem
        docs.append({"doc_id": path.stem, "title": title, "text": text})
    return docs


class Search(Service):
    name = "search"

    def __init__(self, fixture: dict, corpus: list[dict], budget: int | None):
        super().__init__(fixture)
        self.docs = corpus
        self.budget = budget
        self.used = 0
        self._bm25 = BM25Okapi([tokens(f"{d.get('title', '')} {d.get('text', '')}") for d in corpus]) if corpus else None

    def routes(self):
        return {"/search/query": self.query, "/search/get": self.get}

    def query(self, body):
        need(body, "query")
        if self.budget is not None and self.used >= self.budget:
            raise ApiError(403, f"search budget used up: this task allows {self.budget} queries and all were "
                                f"made; answer with what you have found",
                           {"refused_queries": [{"query": body["query"]}]})
        self.used += 1
        top_k = max(1, min(int(body.get("top_k") or 5), 20))
        results = []
        if self._bm25 is not None:
            scores = self._bm25.get_scores(tokens(body["query"]))
            ranked = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))[:top_k]
            results = [{"doc_id": self.docs[i]["doc_id"], "title": self.docs[i].get("title", ""),
                        "url": self.docs[i].get("url", ""), "snippet": preview(self.docs[i].get("text", ""), 200),
                        "score": round(float(scores[i]), 4)} for i in ranked if scores[i] > 0]
        remaining = None if self.budget is None else self.budget - self.used
        return 200, {"query": body["query"], "results": results, "queries_used": self.used,
                     "queries_remaining": remaining}, {"queries": [{"n": self.used, "query": body["query"]}]}

    def get(self, body):
        need(body, "doc_id")
        for d in self.docs:
            if d["doc_id"] == body["doc_id"]:
                return 200, dict(d), {}
        raise ApiError(404, f"document {body['doc_id']} not found")
