"""An export's tables written as their rows come (`exports.tables`): the same files whatever the chunk size,
a column's type from all its values even when chunks disagree, row groups of a chunk, nothing left behind
by an error; TRICD's official file streamed in `write_json`'s layout."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.core.io import dumps
from hardneg.core.schema import to_record
from hardneg.exports import tables
from hardneg.exports.common import ExportFolder
from hardneg.exports.rows import TricdPairRow
from hardneg.exports.tricd.official import write_official
from tests.export_run import export_run

ROWS = {
    "train": [
        {"id": 1, "n": 1, "tags": [], "box": [1, 2, 3, 4], "meta": {"a": 1}, "x": None},
        {"id": 2, "n": 2, "tags": [], "box": [5, 6, 7, 8], "meta": {"a": [1, 2]}, "x": None},
        {"id": 3, "n": 2.5, "tags": ["red"], "box": None, "meta": None, "x": None, "late": "yes"},
        {"id": 4, "n": 3, "tags": ["blue", "big"], "box": [9, 9, 9, 9], "meta": {}, "x": 1},
        {"id": 5, "n": 4, "tags": [], "box": [0, 0, 1, 1], "meta": {"b": 2}, "x": "one"},
    ],
    "val": [{"id": 6, "n": 7, "tags": ["old"], "box": [1, 1, 1, 1], "meta": {"c": 3}, "x": None, "v": True}],
    "test": [],
}


def _write(folder: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.setattr(tables, "CHUNK", chunk)
    ExportFolder(folder, "t").write_tables(ROWS)
    return {p.name: p.read_bytes() for p in sorted((folder / "t").iterdir())}


def test_any_chunk_writes_what_one_chunk_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    whole = _write(tmp_path / "whole", 10**6, monkeypatch)
    chunked = _write(tmp_path / "chunked", 2, monkeypatch)
    assert sorted(whole) == [f"{s}.{x}" for s in ("test", "train", "val") for x in ("json", "parquet")]
    for name in whole:
        if name.endswith(".json"):
            assert chunked[name] == whole[name]
    a, b = (pq.read_table(tmp_path / d / "t" / "train.parquet") for d in ("whole", "chunked"))
    assert a.schema == b.schema and a.to_pylist() == b.to_pylist()
    types = {f.name: f.type for f in a.schema}
    # the chunks saw int64 then double, list<null> then list<string>, null then int64 then string
    assert types["n"] == pa.float64() and types["tags"].value_type == pa.string() and types["x"] == pa.string()
    assert types["box"].value_type == pa.int64() and types["meta"] == pa.string()
    assert list(types) == ["id", "n", "tags", "box", "meta", "x", "late", "v"]  # train's columns, then val's
    assert pq.ParquetFile(tmp_path / "chunked" / "t" / "train.parquet").num_row_groups == 3
    assert pq.read_table(tmp_path / "chunked" / "t" / "test.parquet").schema == a.schema
    assert orjson.loads(chunked["val.json"]) == ROWS["val"] and chunked["test.json"] == b"[]\n"


def test_an_error_leaves_nothing_behind(tmp_path: Path):
    folder = ExportFolder(tmp_path, "t")
    with pytest.raises(RuntimeError), folder.tables() as t:
        t.add("train", ROWS["train"][0])
        raise RuntimeError("a record that cannot be made")
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").iterdir())


@pytest.mark.parametrize("split", ["train", "test"])
def test_tricd_official_file_is_write_jsons_layout(tmp_path: Path, split: str):
    pairs = [to_record(r, TricdPairRow) for r in orjson.loads((export_run() / "tricd" / f"{split}.json").read_bytes())]
    out = tmp_path / "official.json"
    write_official(out, iter(pairs), "tricd")
    data = orjson.loads(out.read_bytes())
    assert out.read_bytes() == dumps(data, indent=True) + b"\n"
    assert len(data["images"]) == len(pairs) and data["annotations"] and data["categories"]
    assert [p.name for p in tmp_path.iterdir()] == ["official.json"]  # the annotations' side file is gone
    write_official(out, iter(()), "tricd")
    assert orjson.loads(out.read_bytes()) == {"images": [], "annotations": [], "categories": data["categories"]}
    assert out.read_bytes() == dumps(orjson.loads(out.read_bytes()), indent=True) + b"\n"


def test_rows_given_as_lists_are_not_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def no_reads(path: Path) -> None:
        raise AssertionError(f"{path} read back")

    monkeypatch.setattr(tables, "iter_json_array", no_reads)
    monkeypatch.setattr(tables, "CHUNK", 2)
    ExportFolder(tmp_path, "t").write_tables(ROWS)  # the chunks disagree on types: the held rows settle them
    assert pq.read_table(tmp_path / "t" / "train.parquet").to_pylist()[2]["n"] == 2.5
    with pytest.raises(AssertionError, match="read back"), ExportFolder(tmp_path, "u").tables() as t:
        t.add("train", ROWS["train"][0])
