"""Tests for the streaming half of the GQA loader (core/gqa/stream.py, imported through core/gqa/loader.py)
and the synthetic corpus generator. Per-image validation is tested in test_gqa_loader_validation.py."""

from __future__ import annotations

import random
import re
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.synthetic_gqa import write_synthetic_gqa
from hardneg.core.errors import InputError
from hardneg.core.gqa.loader import iter_raw_graphs, load_graphs
from hardneg.core.gqa.stream import GraphLimits, RawDefect

CHUNK_SIZES = (1, 7, 64, 1000, 8 << 20)


def _graph(**over: Any) -> dict[str, Any]:
    """A valid two-object GQA graph."""
    g: dict[str, Any] = {
        "width": 100,
        "height": 80,
        "location": "indoors",
        "objects": {
            "11": {
                "name": "man",
                "x": 10,
                "y": 5,
                "w": 20,
                "h": 40,
                "attributes": ["tall", "young"],
                "relations": [{"name": "to the left of", "object": "12"}],
            },
            "12": {
                "name": "table",
                "x": 50,
                "y": 30,
                "w": 40,
                "h": 30,
                "attributes": [],
                "relations": [{"name": "to the right of", "object": "11"}],
            },
        },
    }
    g.update(over)
    return g


def _write(path: Path, doc: Any) -> Path:
    path.write_bytes(doc if isinstance(doc, bytes) else orjson.dumps(doc))
    return path


def _tricky_doc() -> dict[str, Any]:
    """Images whose strings hold braces, brackets, commas, escaped quotes and trailing backslashes."""
    a = _graph()
    a["objects"]["11"]["name"] = 'a \\"quoted\\" {name}'  # backslashes before quotes: odd runs
    a["objects"]["12"]["name"] = "ends with a backslash\\"  # the closing quote follows a backslash
    a["objects"]["12"]["attributes"] = ["}", "]", "{[", ",", '"', "\\\\", "\\\\\\", "caf\u00e9 \U0001f600"]
    b = _graph(weather='sunny"}, "x": {')
    b["objects"]["11"]["relations"].append({"name": "}]},{[", "object": "12"})
    return {"2386621": a, "n1}": b, 'x"\\': _graph(), "2": _graph(height=70)}


def test_tricky_file_matches_orjson_at_every_chunk_size(tmp_path: Path) -> None:
    doc = _tricky_doc()
    compact = orjson.dumps(doc)
    pretty = orjson.dumps(doc, option=orjson.OPT_INDENT_2).replace(b"\n", b"\r\n\t ")
    assert b'\\\\"' in compact and b'\\\\\\"' in compact  # both backslash parities are exercised
    for raw in (compact, b" \n" + pretty + b"\n\n"):
        path = _write(tmp_path / "g.json", raw)
        expected = list(orjson.loads(raw).items())
        for chunk_size in CHUNK_SIZES:
            assert list(iter_raw_graphs(path, chunk_size)) == expected, chunk_size


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice('ab{}[]",:\\ \u00e9') for _ in range(rng.randint(0, 8)))


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randint(0, 6 if depth < 3 else 3)
    if kind == 0:
        return _random_string(rng)
    if kind == 1:
        return rng.randint(-5, 5)
    if kind == 2:
        return rng.choice([None, True, False, 1.5])
    if kind == 3:
        return []
    if kind <= 5:
        return {_random_string(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


@pytest.mark.parametrize("seed", range(20))
def test_random_json_matches_orjson(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    doc = {f"{i}{_random_string(rng)}": _random_value(rng) for i in range(rng.randint(0, 12))}
    raw = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if seed % 2 else 0)
    path = _write(tmp_path / "r.json", raw)
    for chunk_size in (1, 2, 3, 5, 16, 4096):
        assert list(iter_raw_graphs(path, chunk_size)) == list(doc.items()), chunk_size


def test_folder_loads_scene_graph_files_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path / "val_sceneGraphs.json", {"3": _graph(), "1": _graph()})
    _write(tmp_path / "train_sceneGraphs.json", {"9": _graph(), "2": _graph()})
    _write(tmp_path / "other.json", {"5": _graph()})  # not a scene-graph file: ignored
    assert [k for k, _ in iter_raw_graphs(tmp_path, 16)] == ["9", "2", "3", "1"]
    assert [c.image_id for c in load_graphs(tmp_path)] == ["9", "2", "3", "1"]


def test_folder_without_scene_graphs_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "other.json", {"5": _graph()})
    with pytest.raises(InputError, match=r"no \*sceneGraphs\*\.json"):
        list(iter_raw_graphs(tmp_path))


def _collect(path: Path, chunk_size: int) -> tuple[list[str], InputError | None]:
    ids: list[str] = []
    try:
        for image_id, _ in iter_raw_graphs(path, chunk_size):
            ids.append(image_id)
    except InputError as e:
        return ids, e
    return ids, None


@pytest.mark.parametrize("chunk_size", (5, 64, 1 << 20))
def test_truncated_file_yields_complete_images_then_raises(tmp_path: Path, chunk_size: int) -> None:
    raw = orjson.dumps({"1": _graph(), "2": _graph(), "3": _graph()})
    third = raw.index(b'"3":')
    cuts = [
        (third + 40, "depth 2"),
        (third + 30, "inside a string"),
        (third, "depth 1"),
        (third - 1, "depth 1"),
        (third - 2, "depth 2"),
    ]
    for cut, where in cuts:
        path = _write(tmp_path / "t.json", raw[:cut])
        ids, err = _collect(path, chunk_size)
        assert ids == (["1"] if cut == third - 2 else ["1", "2"]), cut
        assert err is not None and "truncated" in str(err) and where in str(err)
        assert str(path) in str(err) and f"byte {cut}:" in str(err)


def test_syntax_error_raises_with_its_byte_offset(tmp_path: Path) -> None:
    raw = orjson.dumps({"1": _graph(), "2": _graph(), "3": _graph()})
    at = raw.index(b'"width":100,', raw.index(b'"2":')) + len(b'"width":100,')
    broken = raw[:at] + b"," + raw[at:]  # a stray comma inside image 2, at byte `at`
    path = _write(tmp_path / "s.json", broken)
    for chunk_size in (3, 4096):
        ids, err = _collect(path, chunk_size)
        assert ids == ["1"]
        assert err is not None and "invalid JSON" in str(err) and f"s.json, byte {at}:" in str(err)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b' [{"1": {}}]', "top level must be an object of image id -> graph, got an array"),
        (b'"x"', "got a string"),
        (b"", "empty file"),
        (b'{"1": 5} {"2": 6}', "trailing data"),
        (b'{"1": 5,}', "empty member"),
        (b'{"1": 5]', "']' closes the top-level object"),
    ],
)
def test_file_level_defects_raise_an_input_error(tmp_path: Path, raw: bytes, message: str) -> None:
    path = _write(tmp_path / "bad.json", raw)
    for chunk_size in (1, 4096):
        with pytest.raises(InputError, match=re.escape(message)):
            list(iter_raw_graphs(path, chunk_size))


def test_empty_top_level_object_yields_nothing(tmp_path: Path) -> None:
    assert list(load_graphs(_write(tmp_path / "e.json", b" { \n } \n"), 1)) == []


def test_an_unbalanced_quote_runs_to_the_end_of_the_file_held_in_bounded_memory(tmp_path: Path) -> None:
    raw = b'{"1": {"name": "open quote}, "2": {}' + b" " * 5000 + b"}"
    path = _write(tmp_path / "q.json", raw)
    with pytest.raises(InputError, match="truncated file: it ends inside a string, in the image that starts at byte 1"):
        list(iter_raw_graphs(path, 64, max_member_bytes=1000))


def test_a_well_formed_member_over_the_cap_is_rejected_and_the_others_read(tmp_path: Path) -> None:
    """Failed before: one well-formed image over the cap (64 MiB by default) stopped the whole run ("member
    longer than ... bytes (unbalanced quote?)") instead of being rejected with its reason."""
    names = ",".join(f'"{i}": {{"name": "cup \\" {"x" * 30}", "x": 1, "y": 1, "w": 5, "h": 5}}' for i in range(400))
    big = f'"big": {{"width": 100, "height": 100, "objects": {{{names}}}}}'.encode()
    good = b'"ok": {"width": 100, "height": 100, "objects": {"1": {"name": "cup", "x": 1, "y": 1, "w": 5, "h": 5}}}'
    path = _write(tmp_path / "big.json", b"{" + good + b", " + big + b", " + good.replace(b'"ok"', b'"ok2"') + b"}")
    for chunk_size in (64, 4096):
        got = list(iter_raw_graphs(path, chunk_size, max_member_bytes=2000))
        assert [k for k, _ in got] == ["ok", "big", "ok2"]
        assert isinstance(got[1][1], RawDefect) and f"{len(big) + 1:,} bytes of JSON" in got[1][1].reason  # its space
        assert "above the 2,000 a member may be held" in got[1][1].reason
    limits = GraphLimits(max_graph_bytes=1000)  # as with the defaults: the limit a user sets is the one named
    [_, (_, why), _] = list(iter_raw_graphs(path, 4096, max_member_bytes=2000, limits=limits))
    assert "above the limit of 1,000 (inputs.max_graph_bytes)" in why.reason


def test_streaming_keeps_python_allocations_small(tmp_path: Path) -> None:
    path = write_synthetic_gqa(tmp_path / "train_sceneGraphs.json", n_images=2000, seed=3)
    size = path.stat().st_size
    assert size > 5_000_000
    tracemalloc.start()
    try:
        n = sum(1 for c in load_graphs(path, chunk_size=64 << 10) if c.ok)
        _, stream_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        whole = orjson.loads(path.read_bytes())
        _, whole_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == len(whole) == 2000
    assert whole_peak > size  # the measurement does see a whole-file load
    # Chunk + scanner arrays + one image's raw and validated graph + the ids seen: well under the file.
    assert stream_peak < size / 5 and stream_peak < whole_peak / 20, (stream_peak, size, whole_peak)


def test_synthetic_corpus_is_deterministic(tmp_path: Path) -> None:
    a = write_synthetic_gqa(tmp_path / "a.json", n_images=50, seed=7).read_bytes()
    b = write_synthetic_gqa(tmp_path / "b.json", n_images=50, seed=7).read_bytes()
    c = write_synthetic_gqa(tmp_path / "c.json", n_images=50, seed=8).read_bytes()
    assert a == b and a != c


def test_synthetic_corpus_is_gqa_like(tmp_path: Path) -> None:
    path = write_synthetic_gqa(tmp_path / "train_sceneGraphs.json", n_images=400, seed=1)
    checks = list(load_graphs(path))
    assert len(checks) == 400 and all(c.ok for c in checks)
    repairs = Counter()
    for c in checks:
        repairs.update(c.repairs)
    assert set(repairs) == {"clipped_box"}  # a few boxes spill; nothing else needs repair
    graphs = [c.graph for c in checks]
    n_obj = [len(g.objects) for g in graphs]
    edges = [(g.image_id, oid, r.name, r.object) for g in graphs for oid, o in g.objects.items() for r in o.relations]
    assert 14 < sum(n_obj) / len(graphs) < 18 and 40 < len(edges) / len(graphs) < 60
    assert 0.005 < repairs["clipped_box"] / sum(n_obj) < 0.06
    names = Counter(r[2] for r in edges)
    lr = names["to the left of"] + names["to the right of"]
    assert 0.4 < lr / len(edges) < 0.7
    assert names.most_common(3)[2][0] == "on"
    edge_set = set(edges)
    flip = {"to the left of": "to the right of", "to the right of": "to the left of"}
    for image_id, a, name, b in edges:
        if name in flip:
            assert (image_id, b, flip[name], a) in edge_set
    objects = [o for g in graphs for o in g.objects.values()]
    top_names = [n for n, _ in Counter(o.name for o in objects).most_common(10)]
    assert "man" in top_names and "window" in top_names
    sizes = Counter((g.width, g.height) for g in graphs)
    assert sum(v for (w, h), v in sizes.items() if max(w, h) == 500) / len(graphs) > 0.9
