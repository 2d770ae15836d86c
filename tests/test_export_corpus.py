"""The exports' corpus index and its checks: graphs read by their place in the files, checks run in rounds,
candidates certified in order until enough pass, with the winners of certifying every one; TRICD's ranking
and the certifier's per-graph answers against their plain definitions."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.certify import Certifier
from hardneg.core.config import SplitsConfig
from hardneg.core.executor import GraphIndex
from hardneg.core.records import PathEdge, PathNode
from hardneg.core.rows import GraphRow
from hardneg.core.schema import to_record
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.exports.corpus import Candidates, Corpus, GraphChecks, GraphReader, drawn
from hardneg.exports.tricd.rank import candidate_pool, path_edges, rank_distractors
from tests.helpers import kept_positive

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
    assert corpus.by_pair[("train", "cup", "red")]
    assert not corpus.edge_numbers([("cup", "near")]) & set(corpus.edges["001"])
    assert len(corpus.edge_numbers([("table", "near")]) & set(corpus.edges["001"])) == 1
    assert "missing" not in corpus.places
    with corpus.reader() as reader:
        graphs = {i: reader.graph(corpus.places[i]) for i in ("007", "000", "011")}
    for image_id, g in graphs.items():
        assert g.image_id == image_id
        row = next(r for r in rows if r["image_id"] == image_id)
        assert g == to_record(row, GraphRow).scene_graph()
    in_memory = Corpus.of_rows([to_record(r, GraphRow) for r in rows], SPLITS)
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


def _random_row(rng: random.Random, image_id: str) -> dict[str, Any]:
    names = ("man", "person", "woman", "dog", "animal", "cup", "mug", "table", "tree", "umbrella")
    objects = {}
    n = rng.randint(1, 7)
    for k in range(n):
        x, y = rng.randint(0, 80), rng.randint(0, 40)
        others = [str(j) for j in range(n) if j != k]
        objects[str(k)] = {
            "name": rng.choice(names), "x": x, "y": y, "w": rng.randint(1, 20), "h": rng.randint(1, 10),
            "attributes": rng.sample(["red", "white", "blue", "small", "large", "wooden"], rng.randint(0, 2)),
            "relations": [{"name": rng.choice(["holding", "on", "near", "to the left of"]), "object": o}
                          for o in rng.sample(others, min(len(others), rng.randint(0, 2)))],
        }  # fmt: skip
    return {"image_id": image_id, "graph": {"width": 100, "height": 50, "objects": objects,
                                            "location": rng.choice([None, "indoors", "outdoors"])}}  # fmt: skip


def _random_path(rng: random.Random, depth: int = 0) -> PathNode:
    name = rng.choice(("man", "person", "dog", "cup", "table", "tree", "umbrella"))
    attributes = tuple(rng.sample(["red", "white", "small", "large"], rng.randint(0, 1)))
    relations = ()
    if depth < 2 and rng.random() < 0.6:
        relations = (PathEdge(rng.choice(["holding", "on", "near", "to the right of"]), _random_path(rng, depth + 1)),)
    return PathNode(name, attributes, relations)


def test_ranking_is_the_documented_score():
    """The ranking (arrays over the pool) against the score as the TRICD module states it, one candidate at a
    time, the union built as a set."""
    rng = random.Random(1)
    rows = [_random_row(rng, f"{i:03d}") for i in range(150)]
    corpus = Corpus.of_rows([to_record(r, GraphRow) for r in rows], SPLITS)
    for trial in range(60):
        i0, path = rng.choice(rows)["image_id"], _random_path(rng)
        pool = candidate_pool(corpus, i0, path, 40, 0, "tricd", trial)
        partners = {n.name for n in path.nodes()[1:]} - {path.name}
        edges = path_edges(path)
        me = corpus.images[i0]

        def score(j: str, partners=partners, edges=edges, me=me, path=path) -> tuple[int, float]:
            info = corpus.images[j]
            name_share = len(partners & info.names) / len(partners) if partners else 0.0
            edge_share = len(corpus.edge_numbers(edges) & set(corpus.edges[j])) / len(edges) if edges else 0.0
            union = len(me.names | info.names)
            place = 0.5 if me.location is not None and me.location == info.location else 0.0
            return int(path.name in info.names), name_share + edge_share + (len(me.names & info.names) / union + place)

        want = sorted(pool, key=lambda j: (-score(j)[0], -score(j)[1], j))[:15]
        assert rank_distractors(corpus, kept_positive(id=trial, image_id=i0), path, 40, 15, 0) == want


def test_the_certifier_answers_alike_with_the_graphs_index():
    """Candidates found once per graph and name (`GraphIndex.memo`) give the verdicts found without it."""
    rng = random.Random(2)
    words, table = Words.load(), AttributeTable.load(None)
    cert = Certifier(words, table)
    for i in range(200):
        g = to_record(_random_row(rng, f"{i:03d}"), GraphRow).scene_graph()
        index = GraphIndex(g, table)
        for _ in range(6):
            path = _random_path(rng)
            assert cert.uncontradicted(path, g, index) == cert.uncontradicted(path, g)
            assert cert.candidates(path.name, g, index) == cert.candidates(path.name, g)
        assert all(cert.candidates(n, g, index) is cert.candidates(n, g, index) for n in ("man", "cup"))


def test_a_drawn_order_is_a_keyed_uniform_permutation_paid_for_as_it_is_taken():
    items = [f"name{i}" for i in range(50)]
    order = list(drawn(items, 7, "probe_r/subject", 1))
    assert sorted(order) == sorted(items) and order != items
    assert list(drawn(items, 7, "probe_r/subject", 1)) == order  # keyed: the same every run
    assert list(drawn(items, 7, "probe_r/subject", 2)) != order
    firsts = Counter(tuple(drawn("abc", k)) for k in range(6000))
    assert len(firsts) == 6 and all(800 < n < 1200 for n in firsts.values()), firsts  # each of the 6 about 1/6
    # the first few of a billion names cost a few draws (a shuffle of them all would not end)
    assert len(set(itertools.islice(drawn(range(10**9), 3), 5))) == 5
