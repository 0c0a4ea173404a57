import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional


@dataclass
class Entry:
    name: str
    description: str = ""
    tags: list[str] = field(default_factory=list)

    def matches(self, words: Iterable[str]) -> int:
        text = f"{self.name} {self.description}".lower()
        return sum(1 for w in words if w.lower() in text)


def load_catalog(path: str) -> list[Entry]:
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    out = []
    for tool in raw.get("tools", []):
        out.append(Entry(tool["name"], tool.get("description", ""), tool.get("tags", [])))
    return out


def rank(entries: list[Entry], request: str, limit: Optional[int] = 10) -> list[Entry]:
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", request) if len(w) > 2]
    scored = sorted(entries, key=lambda e: (-e.matches(words), e.name))
    return scored[:limit] if limit else scored


if __name__ == "__main__":
    import sys

    catalog = load_catalog(sys.argv[1])
    for i, entry in enumerate(rank(catalog, " ".join(sys.argv[2:])), start=1):
        print(f"{i:>3}. {entry.name:<32} {entry.description[:60]}")
