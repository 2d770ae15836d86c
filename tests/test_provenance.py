"""What a run says about how it was made is true: versions, the models that actually ran, and that a
decision-only change never re-scores. Each test here fails on the code before the stage redesign."""

from __future__ import annotations

import shutil
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest
from PIL import Image

from hardneg.core.config import load_config
from hardneg.core.resources import data_path
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES, resplit, run_local
from hardneg.generators.text import rewrite

SMALL = {"demo": {"n_scenes": 8}, "shard_size": 4, "images": {"enabled": False}}


@pytest.fixture(scope="module")
def lexicon_v9(tmp_path_factory) -> Path:
    """The bundled lexicon under another version: the manifest must name the one that ran."""
    f = tmp_path_factory.mktemp("lexicon") / "lexicon.v9.yaml"
    f.write_text(data_path("templates/lexicon.v1.yaml").read_text().replace("version: v1", "version: v9", 1))
    return f


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, lexicon_v9) -> Path:
    root = tmp_path_factory.mktemp("prov") / "run"
    run_local(load_config(None, {**SMALL, "language": {"lexicon": str(lexicon_v9)}}), root)
    return root


def _manifest(root: Path) -> dict:
    return orjson.loads((root / "manifest.json").read_bytes())


def test_the_manifest_names_the_language_backend_and_spacy_pipeline_that_ran(small_run: Path):
    m = _manifest(small_run)
    assert m["models"]["language_backend"] == ["lexicon@v9"]
    [spacy_name] = m["models"]["spacy"]
    assert spacy_name.startswith("en_core_web_sm") and spacy_name == rewrite.spacy_model_name()


def test_the_manifest_version_is_the_installed_package_and_every_stage_has_its_version(small_run: Path):
    m = _manifest(small_run)
    assert m["hardneg_version"] == version("hardneg")
    assert m["versions"]["stages"]["images"] == "negatives_image@v5"
    names = [s.name for s in STAGES]
    after = set(names[names.index("write") :])  # write and what runs after it (exports, report): not summarised
    assert set(m["versions"]["stages"]) == set(m["stages"]) | after
    assert all(s["seconds"] >= 0 for s in m["stages"].values())


def test_spacy_model_name_says_when_the_blank_fallback_ran(monkeypatch):
    import spacy

    def missing(*args, **kwargs):
        raise OSError("no such model")

    rewrite.load_nlp.cache_clear()
    monkeypatch.setattr(spacy, "load", missing)
    try:
        rewrite.load_nlp()
        assert rewrite.spacy_model_name() == "spacy.blank(en)"
    finally:
        rewrite.load_nlp.cache_clear()


def test_a_decision_only_change_re_decides_without_re_scoring(small_run: Path, tmp_path: Path):
    root = tmp_path / "copy"
    shutil.copytree(small_run, root)

    def stamps() -> dict[str, int]:
        return {d.name: (d / "_stage.json").stat().st_mtime_ns for d in (root / "work").iterdir() if d.is_dir()}

    before = stamps()
    outcome = resplit(root, {"negative_mix": {"per_positive": 0.3, "min_per_positive": 0.1}})  # fewer negatives
    assert not outcome.unchanged
    after = stamps()
    # `decide` and every stage that reads what it decided (the exports pick from decided samples), nothing that
    # scores: the shipped ones by name, and any stage an export plugin adds by what it declares it reads
    changed = {k for k in after if after[k] != before[k]}
    assert {"decide", "write", "tricd", "probes", "imagecode", "report"} <= changed
    reads = Run(root, load_config(None), STAGES).reads
    assert changed == {"decide"} | {name for name, r in reads.items() if "decide" in r}


def test_an_unreadable_donor_is_a_reject_never_a_silent_removal(tmp_path: Path):
    from hardneg.backends.inpaint_opencv import OpenCVInpainter
    from hardneg.backends.lexicon import LexiconBackend
    from hardneg.core.words.attribute_table import AttributeTable
    from hardneg.core.words.table import Words
    from hardneg.core.words.vocab import Lexicon
    from hardneg.generators.images.edits import Donor, ImageContext
    from hardneg.generators.images.stage import make_image_negatives
    from tests.helpers import graph, node, obj, positive_row

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (500, 400), (90, 120, 200)).save(images / "img1.jpg")
    (images / "img2.jpg").write_bytes(b"\xff\xd8 truncated")  # the only donor of "frisbee"
    g = graph(obj("1", "ball", box=(60, 120, 80, 80)), image_id="img1")
    positive = positive_row(node("ball", oid="1"), "the ball", image_id="img1", id=7, template="0_hop@v1#0",
                            bbox=[60, 120, 80, 80])  # fmt: skip
    ctx = ImageContext(
        table=AttributeTable.load(),
        words=Words.load(),
        vocab={"names": Counter({"ball": 3, "frisbee": 1}), "attributes": Counter(), "relations": Counter()},
        donors={"frisbee": [Donor("img2", "9", (0, 0, 70, 70))]},
        images_dir=images,
        out_dir=tmp_path / "out",
        seed=0,
        candidates=1,
        types=("replace_object",),
    )
    lexicon = LexiconBackend(Lexicon.load(data_path("templates/lexicon.v1.yaml")))
    rows, rejects, stats = make_image_negatives([positive], {"img1": g}, ctx, lexicon, OpenCVInpainter())
    assert not any(r.edit["op"] == "remove" for r in rows)  # before: the unreadable donor became a removal
    assert any("donor image img2.jpg for 'frisbee' unreadable" in r.reason for r in rejects)
    assert stats["donor_unreadable"] >= 1
