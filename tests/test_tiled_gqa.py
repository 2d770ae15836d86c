"""The benchmark corpus of real graphs tiled to any size (`benchmarks/tiled_gqa.py`)."""

from __future__ import annotations

import orjson

from benchmarks.tiled_gqa import density, source_of, write_tiled_gqa
from hardneg.core.gqa.plausibility import fold_of


def _source(tmp_path, name: str, n: int):
    graphs = {
        f"{name}{i}": {"width": 100, "height": 100, "objects": {
            "1": {"name": "cup", "x": 1, "y": 1, "w": 9, "h": 9, "attributes": ["white"],
                  "relations": [{"name": "on", "object": "2"}]},
            "2": {"name": "table", "x": 0, "y": 0, "w": 90, "h": 90, "attributes": [], "relations": []},
        }}
        for i in range(n)
    }  # fmt: skip
    path = tmp_path / f"{name}.json"
    path.write_bytes(orjson.dumps(graphs))
    return path


def test_copies_keep_their_sources_fold_and_get_ids_of_their_own(tmp_path):
    """A copy in the other half of the images than its source would be the very positive the cross-fitted
    blind scorers were fit on (refinement then drops most of a tiled corpus's negatives)."""
    a, b = _source(tmp_path, "a", 7), _source(tmp_path, "b", 3)
    out = write_tiled_gqa(tmp_path / "tiled.json", [(a, 3.0), (b, 1.0)], 200, seed=0)
    data = orjson.loads(out.read_bytes())
    assert len(data) == 200
    for image_id, graph in data.items():
        source = image_id.split("-s")[0]
        assert fold_of(image_id) == fold_of(source), image_id
        assert source_of(image_id) == (0 if source.startswith("a") else 1)
        assert all(r["object"] in graph["objects"] for o in graph["objects"].values() for r in o["relations"])
    assert sum(1 for i in data if source_of(i) == 0) == 150  # the weights, 3 : 1
    assert density(out)["objects"] == 2.0
