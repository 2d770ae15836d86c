"""The exports' corpus index and its checks: graphs read by their place in the files, checks run in rounds,
candidates certified in order until enough pass, with the winners of certifying every one."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.config import SplitsConfig
from hardneg.core.rows import GraphRow
from hardneg.core.schema import to_record
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.exports.corpus import Candidates, Corpus, GraphChecks, GraphReader

SPLITS = SplitsConfig(train=1.0, val=0.0, test=0.0)


def _row(image_id: str, *names: str) -> dict[str, Any]:
    objects = {
        str(k): {"name": n, "x": 10 * k, "y": 5, "w": 8, "h": 8, "attributes": ["red"] if k == 0 else [],
                 "relations": [{"name": "near", "object": "0"}] if k else []}
        for k, n in enumerate(names)
    }  # fmt: skip
    return {"image_id": image_id, "graph": {"width": 100, "height": 50, "objects": objects}}


def _corpus(tmp_path: Path, n: int = 12) -> tuple[Corpus, list[dict[str, Any]]]:
    rows = [_row(f"{i:03d}", "cup", "table", *(["dog"] if i % 3 == 0 else [])) for i in range(n)]
    files = []
    for k in range(3):  # three shard files, rows in a scrambled order across them
        f = tmp_path / f"graphs-{k:05d}.jsonl"
        f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows[k::3][::-1]) + b"\n")
        files.append(f)
    return Corpus.build(files, SPLITS), rows


class CountingCorpus(Corpus):
    """The corpus, keeping the image ids each reader (one a round) reads."""

    rounds: list[list[str]]

    def reader(self) -> GraphReader:
        self.rounds = [*getattr(self, "rounds", []), []]
        read = self.rounds[-1]

        class Counting(GraphReader):
            def graph(self, place):  # type: ignore[no-untyped-def]
                g = super().graph(place)
                read.append(g.image_id)
                return g

        return Counting(self)


def test_the_index_holds_every_row_and_reads_each_graph_from_its_place(tmp_path: Path):
    corpus, rows = _corpus(tmp_path)
    assert set(corpus.images) == {r["image_id"] for r in rows}
    assert list(corpus.by_name[("train", "dog")]) == ["000", "003", "006", "009"]
    assert corpus.by_pair[("train", "cup", "red")] and ("cup", "near") not in corpus.edges["001"]
    assert ("table", "near") in corpus.edges["001"]
    assert "missing" not in corpus.places
    with corpus.reader() as reader:
        graphs = {i: reader.graph(corpus.places[i]) for i in ("007", "000", "011")}
    for image_id, g in graphs.items():
        assert g.image_id == image_id
        row = next(r for r in rows if r["image_id"] == image_id)
        assert g == to_record(row, GraphRow).scene_graph()
    in_memory = Corpus.of_rows(rows, SPLITS)
    for table in ("by_name", "by_pair", "by_edge"):
        assert {k: list(v) for k, v in getattr(in_memory, table).items()} == {
            k: list(v) for k, v in getattr(corpus, table).items()
        }


def test_checks_run_in_rounds_reading_only_the_graphs_they_need(tmp_path: Path):
    built, _ = _corpus(tmp_path)
    corpus = CountingCorpus.build(built.files, SPLITS)
    checks = GraphChecks(AttributeTable.load(None), corpus)
    seen: list[str] = []

    def then_earlier(g, ix):  # type: ignore[no-untyped-def]
        seen.append(g.image_id)
        checks.add("000", lambda g, ix: seen.append(g.image_id))  # in a file read already: the next round
        checks.add("002", lambda g, ix: seen.append(g.image_id))  # in a file still ahead: this round

    checks.add("004", then_earlier)
    checks.add("010", lambda g, ix: seen.append(g.image_id))
    checks.run()
    assert sorted(seen) == ["000", "002", "004", "010"]
    assert [sorted(r) for r in corpus.rounds] == [["002", "004", "010"], ["000"]]  # each graph once a round
    assert not checks.by_image


def test_candidates_win_what_certifying_every_option_would(tmp_path: Path):
    """Certified in order, a window at a time: the winners are the first `want` that pass, and an option
    after them is never tested once they are known."""
    corpus, rows = _corpus(tmp_path)
    ids = [r["image_id"] for r in rows]
    rng = random.Random(0)
    for trial in range(300):
        n, want, window = rng.randint(0, 10), rng.randint(1, 4), rng.randint(1, 5)
        verdicts = [rng.random() < 0.4 for _ in range(n)]
        images = [rng.choice(ids) for _ in range(n)]
        checks = GraphChecks(AttributeTable.load(None), corpus)
        tested: list[int] = []

        decided: list[int] = []
        probe = Candidates({"trial": trial}, want, window, then=lambda p, decided=decided: decided.append(p.passed))
        for k in range(n):
            test = lambda g, ix, k=k, tested=tested, verdicts=verdicts: tested.append(k) or verdicts[k]  # noqa: E731
            probe.add(lambda k=k: {"k": k}, [(images[k], test)])
        probe.start(checks)
        checks.run()
        passing = [k for k in range(n) if verdicts[k]]
        assert [o["k"] for o in probe.won()] == passing[:want]
        assert decided == [len(passing[:want])]
        assert sorted(tested)[: len(passing[:want])] == list(range(len(passing[:want])))  # in order
        if len(passing) >= want and window == 1:  # as many in flight as winners missing: none past them
            assert max(tested) < passing[want - 1] + want
