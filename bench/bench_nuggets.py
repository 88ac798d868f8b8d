"""Gold nugget benchmark: CONE-RAG import/export at the paper's scale, and saving spans on a long passage.

Figures, each with a baseline run in the same invocation:
- importing a 2,300-nugget CONE-RAG file (116 turns, the size of the iKAT 2024 human set) with every
  check, against json.load + one bulk_create of the same rows;
- exporting it byte for byte, against json.dumps of the same dict;
- saving one span (server check, next key, coverage) on a 20,000-character passage that already holds
  500 nuggets, against a bare Nugget.objects.create.
Run: .venv/bin/python bench/bench_nuggets.py
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

scratch = django_with_temp_database()

from annotation.models import Collection, Judge, Nugget, Passage, Topic, Turn  # noqa: E402
from annotation.nuggets.io import nuggets_export, nuggets_import  # noqa: E402
from annotation.nuggets.services import nugget_create  # noqa: E402

rng = random.Random(4)
WORDS = "the tyre grip mud trail skin rays depression symptom mood museum visa cairo bike wide".split()


def sentence(n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


collection = Collection.objects.create(name="bench-nuggets")
turns = []
for t in range(116):
    topic = Topic.objects.create(collection=collection, number=str(t))
    turns.append(
        Turn.objects.create(collection=collection, topic=topic, turn_id=f"{t}_1", position=1, utterance="q")
    )
data = {}
for turn in turns:
    data[turn.turn_id] = {
        f"[{k}]": {
            "text": (" " if k % 3 == 0 else "") + sentence(rng.randint(8, 40)) + " ",
            "relevance": str(rng.randint(1, 4)),
        }
        for k in range(1, 21)
    }
data[turns[-1].turn_id] = {}
path = scratch / "gold_nuggets.json"
path.write_text(json.dumps(data, indent=4))
n = sum(len(v) for v in data.values())

judge = Judge.objects.create(name="bench-import", kind=Judge.Kind.IMPORTED)
ours = timed(lambda: nuggets_import(path=path, collection=collection, judge=judge, fmt="cone-rag"))
raw_judge = Judge.objects.create(name="bench-raw", kind=Judge.Kind.IMPORTED)
by_id = {t.turn_id: t for t in turns}


def baseline_import() -> None:
    loaded = json.loads(path.read_text())
    Nugget.objects.bulk_create(
        [
            Nugget(judge=raw_judge, turn=by_id[tid], key=k, text=v["text"], relevance=v["relevance"])
            for tid, nuggets in loaded.items()
            for k, v in nuggets.items()
        ]
    )


base = timed(baseline_import)
print(
    f"import {n} CONE-RAG nuggets: {ours:.3f} s vs bulk_create baseline {base:.3f} s (ratio {ours / base:.1f}x)"
)
again = timed(lambda: nuggets_import(path=path, collection=collection, judge=judge, fmt="cone-rag"))
print(f"re-import (nothing changes): {again:.3f} s (ratio {again / base:.1f}x the baseline import)")

text_holder: list[str] = []
ours = timed(lambda: text_holder.append(nuggets_export(collection=collection, judge=judge, fmt="cone-rag")))
base = timed(lambda: json.dumps(data, indent=4))
assert text_holder[0] == path.read_text(), "export is not byte for byte"
print(
    f"export {n} nuggets byte for byte: {ours:.3f} s vs json.dumps baseline {base:.4f} s (ratio {ours / base:.0f}x)"
)

long_text = " ".join(sentence(12) + "." for _ in range(260))[:20000]
passage = Passage.objects.create(collection=collection, passage_id="long:0", text=long_text)
writer = Judge.objects.create(name="bench-writer", kind=Judge.Kind.IMPORTED)
turn = turns[0]
spans = []
for _ in range(500):
    s = rng.randrange(0, len(long_text) - 200)
    spans.append((s, s + rng.randint(20, 200)))
for s, e in spans:
    if long_text[s:e].strip():
        nugget_create(judge=writer, turn=turn, passage=passage, start=s, end=e, text=long_text[s:e])
rounds = 100
ours = timed(
    lambda: [
        nugget_create(judge=writer, turn=turn, passage=passage, start=s, end=e, text=long_text[s:e])
        for s, e in spans[:rounds]
        if long_text[s:e].strip()
    ]
)
base = timed(
    lambda: [
        Nugget.objects.create(
            judge=raw_judge, turn=turn, key=f"b{i}", text=long_text[s:e], passage_id="long:0", start=s, end=e
        )
        for i, (s, e) in enumerate(spans[:rounds])
    ]
)
print(
    f"save a span on a 20,000-char passage with 500+ nuggets: {ours / rounds * 1000:.2f} ms vs bare create "
    f"{base / rounds * 1000:.2f} ms (ratio {ours / base:.1f}x)"
)
