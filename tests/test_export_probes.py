"""The probes export: Probe-R, Probe-C and Probe-B read straight into `evaluation.probes` (an oracle scores
100, a blind model chance), and every certificate holds when re-executed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

from hardneg.core.attributes import AttributeTable
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.io import read_jsonl
from hardneg.core.plausibility import Counts
from hardneg.core.records import PathNode
from hardneg.core.runfolder import stored_config
from hardneg.core.splits import split_of
from hardneg.core.words import Words
from hardneg.evaluation.probes import group_scores, probe_accuracy
from hardneg.generators.export_certify import Certifier
from tests.export_run import export_run, graphs, records

TABLE = AttributeTable.load(None)


@pytest.fixture(scope="module")
def probe_r() -> list[dict]:
    return records(export_run(), "probes/probe_r")


@pytest.fixture(scope="module")
def probe_c() -> list[dict]:
    return records(export_run(), "probes/probe_c")


@pytest.fixture(scope="module")
def probe_b() -> list[dict]:
    return records(export_run(), "probes/probe_b")


def _b_samples(groups: list[dict], f) -> list[dict]:
    """Probe-B as probe samples: per variant image, the target's prompt against each absent name's."""
    return [
        {
            "id": f"{g['id']}/{v}/{k}",
            "kind": f"probe_b/{v}",
            "score_correct": f(g, v, g["prompts"]["target"]),
            "score_swapped": f(g, v, a),
        }
        for g in groups
        for v in g["images"]
        for k, a in enumerate(g["prompts"]["absent"])
    ]


def test_oracle_scores_100_and_blind_scores_chance(probe_r, probe_c, probe_b):
    assert {r["kind"] for r in probe_r} == {"probe_r/predicate", "probe_r/subject", "probe_r/subject_only"}
    assert {r["kind"] for r in probe_c} == {"probe_c/composition", "probe_c/object"}
    assert probe_b

    # Probe-R: one image, the correct prompt against the swapped one (scored by the prompt's text: an export
    # whose two prompts read the same would leave even the oracle at a tie)
    def samples(score):
        return [{"id": r["id"], "kind": r["kind"], "score_correct": score(r, r["correct"]),
                 "score_swapped": score(r, r["swapped"])} for r in probe_r]  # fmt: skip

    best = probe_accuracy(samples(lambda r, prompt: float(prompt == r["correct"])))
    assert best["overall"]["accuracy"] == 1.0 and best["overall"]["count"] == len(probe_r)
    blind = probe_accuracy(samples(lambda r, prompt: 0.0))  # ignores the image and the prompt
    assert blind["overall"]["mean_confidence"] == pytest.approx(0.5)
    flipped = probe_accuracy(samples(lambda r, prompt: float(prompt != r["correct"])))  # the other blind order
    assert (blind["overall"]["accuracy"] + best["overall"]["accuracy"] + flipped["overall"]["accuracy"]) / 2 == 0.5
    # Probe-C: scores[i][j] = f(prompt i, image j); the oracle matches each prompt to its image
    oracle = [{"id": g["id"], "kind": g["kind"], "scores": [[1.0, 0.0], [0.0, 1.0]]} for g in probe_c]
    assert group_scores(oracle)["overall"] == {"text": 1.0, "image": 1.0, "group": 1.0, "count": len(probe_c)}
    # a blind model ranks the four scores at random: averaged over every order, exactly Winoground's chance
    totals = np.zeros(3)
    orders = list(itertools.permutations(range(4)))
    for perm in orders:
        rows = [{"id": g["id"], "kind": g["kind"], "scores": [perm[:2], perm[2:]]} for g in probe_c]
        o = group_scores(rows)["overall"]
        totals += (o["text"], o["image"], o["group"])
    assert totals / len(orders) == pytest.approx([1 / 4, 1 / 4, 1 / 6])
    # Probe-B: the target's name is in every variant, the absent names in none
    best_b = probe_accuracy(_b_samples(probe_b, lambda g, v, prompt: float(prompt == g["prompts"]["target"])))
    assert best_b["overall"]["accuracy"] == 1.0
    assert {"probe_b/x0", "probe_b/bmr/black", "probe_b/br/noise", "probe_b/x0_patch/scene"} <= set(best_b["by_kind"])
    blind_b = probe_accuracy(_b_samples(probe_b, lambda g, v, prompt: 1.0))
    assert blind_b["overall"]["mean_confidence"] == pytest.approx(0.5)


def test_probe_r_certificates(probe_r):
    root = export_run()
    g, words, cert = graphs(root), Words.load(), Certifier(Words.load(), TABLE)
    counts = Counts.from_rows(read_jsonl(root / "work" / "plausibility" / "counts-all.jsonl"))
    splits = stored_config(root).splits
    for r in probe_r:
        image = g[r["image_id"]]
        true, false = (PathNode.from_json(r["certificate"][k]) for k in ("true", "false"))
        assert execute(true, GraphIndex(image, TABLE)), r  # the correct prompt holds
        assert not execute(false, GraphIndex(image, TABLE)) and cert.nothing(false, image) is None, r
        assert r["split"] == split_of(r["image_id"], splits) and (root / r["image"]).is_file()
        s, rel, o = r["triple"]
        assert not words.is_crowd(s)
        if r["kind"] == "probe_r/predicate":
            r2 = r["swap"]["relation"][1]
            assert counts.triples[(s, r2, o)] == 0 and words.relations_contradict(rel, r2, o)[0]
        elif r["kind"] == "probe_r/subject":
            s2 = r["swap"]["subject"][1]
            assert counts.triples[(s2, rel, o)] == 0 and words.names_contradict(s, s2)[0]
        else:  # subject-only: the subject is there, nothing that could be the object is
            assert any(x.name == s for x in image.objects.values())
            assert not any(cert.could_be(x.name, o) for x in image.objects.values())


def test_probe_c_certificates(probe_c):
    root = export_run()
    g, words, cert = graphs(root), Words.load(), Certifier(Words.load(), TABLE)
    splits = stored_config(root).splits
    for r in probe_c:
        x1, x2 = (g[i] for i in r["image_ids"])
        p1, p2 = (PathNode.from_json(p) for p in r["certificate"]["true"])
        assert execute(p1, GraphIndex(x1, TABLE)) and execute(p2, GraphIndex(x2, TABLE)), r
        assert cert.nothing(p2, x1) is None and cert.nothing(p1, x2) is None, r
        assert {split_of(i, splits) for i in r["image_ids"]} == {r["split"]} and x1.image_id != x2.image_id
        if r["kind"] == "probe_c/composition":
            a, anti = r["swap"]["attribute"]
            assert words.antonym(a) == anti and words.attributes_contradict(a, anti)[0]
        else:
            n, m = r["swap"]["object"]
            assert words.names_contradict(n, m)[0] and not words.is_crowd(m)


def test_probe_b_images_keep_the_target_and_replace_the_background(probe_b):
    root = export_run()
    g, words = graphs(root), Words.load()
    for grp in probe_b:
        image = g[grp["image_id"]]
        names = {o.name for o in image.objects.values()}
        for a in grp["absent"]:
            assert a not in names and not any(words.name_relation(n, a) for n in names)
        src = np.asarray(Image.open(root / grp["images"]["x0"]).convert("RGB"), dtype=float)
        x, y, w, h = grp["target"]["box"]
        cx, cy = x + w // 2, y + h // 2  # the target's centre survives in every variant
        for variant, rel in grp["images"].items():
            im = np.asarray(Image.open(root / rel).convert("RGB"), dtype=float)
            assert im.shape == src.shape
            if not variant.startswith("x0_patch"):
                assert abs(im[cy, cx] - src[cy, cx]).max() < 40, variant
        # BR on black: every object but the target is gone, so far from the target's box all is black
        br = np.asarray(Image.open(root / grp["images"]["br/black"]).convert("L"), dtype=float)
        far = np.ones(br.shape, bool)
        far[max(0, y - 40) : y + h + 40, max(0, x - 40) : x + w + 40] = False
        assert np.percentile(br[far], 99) < 40
        bmr = np.asarray(Image.open(root / grp["images"]["bmr/gray"]).convert("L"), dtype=float)
        assert (np.abs(bmr - 128) < 12).mean() >= grp["background_fraction"] * 0.8


def test_prompts_read_as_english_a_mass_noun_takes_the():
    from hardneg.core.words import Words
    from hardneg.generators.export_common import noun_phrase, relation_prompt

    words = Words.load()
    assert relation_prompt(words, "house", "on", "ground") == "a house on the ground"  # not "on ground"
    assert relation_prompt(words, "apple", "on", "table") == "an apple on a table"
    assert noun_phrase(words, "bananas") == "bananas"
    assert noun_phrase(words, "dog", ("small",)) == "a small dog"
