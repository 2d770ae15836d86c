"""The copy-paste donors a run keeps per object name: the `donors_per_name` largest target-worthy boxes,
ties by image and object id, as if every candidate were sorted (the stage keeps only a heap of them)."""

from __future__ import annotations

from pathlib import Path

import orjson

from hardneg.core.config import load_config
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.rows import HYGIENE_GRAPHS
from hardneg.core.runner.stage import Run
from hardneg.core.words.table import Words
from hardneg.flows.pipeline import STAGES
from hardneg.generators.paths.stage import box_reason


def test_donors_are_the_largest_boxes_of_each_name_as_a_full_sort_finds_them(tmp_path: Path):
    """The demo world's cleaned graphs (the ingest and hygiene stages alone) and the images stage's
    preparation, which picks the donors from them."""
    root = tmp_path / "run"
    cfg = load_config(None, {"images": {"donors_per_name": 2}})
    prepare_run(cfg, root)
    run = Run(root, cfg, STAGES)
    for name in ("ingest", "hygiene"):
        run.run_stage(name)
    run.stages["images"].prepare(run, tmp_path)
    got = orjson.loads((tmp_path / "donors.json").read_bytes())

    words, every = Words.load(), {}
    for row in run.records_all(HYGIENE_GRAPHS):
        g = row.scene_graph()
        for o in g.objects.values():
            if words.name_category(o.name) is not None and box_reason(o, g, cfg, as_target=True) is None:
                every.setdefault(o.name, []).append((-o.area, g.image_id, o.id))
    want = {name: [(i, o) for _, i, o in sorted(keys)[:2]] for name, keys in sorted(every.items())}
    assert {name: [(d["image_id"], d["object_id"]) for d in ds] for name, ds in got.items()} == want
    assert any(len(keys) > 2 for keys in every.values())  # the heap had to drop some
    assert list(got) == sorted(got)
