"""The `remove_object` kind of negative image (the worked example of adding a kind): on a drawn scene, the
target is painted out, the edit re-checks through the executor, and pixels change only around its box."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.backends.lexicon import LexiconBackend
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathNode
from hardneg.core.resources import data_path
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.images.edits import ImageContext
from hardneg.generators.images.stage import make_image_negatives
from tests.helpers import graph, node, obj, positive_row


def test_remove_object_paints_out_the_target_and_the_path_then_matches_nothing(tmp_path: Path):
    g = graph(
        obj("1", "ball", ("red",), rels=(("to the left of", "2"),), box=(60, 120, 80, 80)),
        obj("2", "box", ("brown",), box=(300, 100, 120, 120)),
        obj("3", "ball", ("blue",), box=(200, 300, 60, 60)),
        image_id="img1",
    )
    images = tmp_path / "images"
    images.mkdir()
    im = Image.new("RGB", (500, 400), (200, 210, 190))
    d = ImageDraw.Draw(im)
    d.ellipse((60, 120, 140, 200), fill=(220, 30, 30))
    d.rectangle((300, 100, 420, 220), fill=(120, 80, 40))
    d.ellipse((200, 300, 260, 360), fill=(30, 30, 220))
    im.save(images / "img1.jpg", quality=95)
    path = node("ball", "red", oid="1")
    positive = positive_row(path, "the red ball", image_id="img1", id=7, level=2, template="0_hop@v1#0",
                            bbox=[60, 120, 80, 80])  # fmt: skip
    table = AttributeTable.load()
    ctx = ImageContext(
        table=table,
        words=Words.load(),
        vocab={"names": Counter(), "attributes": Counter(), "relations": Counter()},
        donors={},
        images_dir=images,
        out_dir=tmp_path / "run" / "images",
        seed=0,
        candidates=2,
        types=("remove_object",),
    )
    lexicon = Lexicon.load(data_path("templates/lexicon.v1.yaml"))
    rows, rejects, _ = make_image_negatives([positive], {"img1": g}, ctx, LexiconBackend(lexicon), OpenCVInpainter())
    assert not rejects
    [r] = rows
    assert r.negative_type == "remove_object" and r.negative_level == 1
    assert r.edit == {"op": "remove", "object": "1"} and r.edit_boxes == [[60, 120, 80, 80]]
    assert execute(path.without_ids(), GraphIndex(apply_edit(g, r.edit), table)) == frozenset()
    src = np.asarray(Image.open(images / "img1.jpg").convert("RGB"), dtype=np.int16)
    assert len(r.candidates) == 2
    for f in r.candidates:
        cand = np.asarray(Image.open(tmp_path / "run" / f).convert("RGB"), dtype=np.int16)
        inside = np.zeros(src.shape[:2], bool)
        inside[110:210, 50:150] = True
        diff = np.abs(cand - src).sum(axis=2)
        assert diff[~inside].mean() < 3.0  # only JPEG noise outside
        red = (cand[..., 0] > 150) & (cand[..., 1] < 80) & (cand[..., 2] < 80)
        assert red[inside].mean() < 0.05  # the red ball is gone
    assert PathNode.from_json(r.path) == path
