"""The probes export: Probe-R, Probe-C and Probe-B read straight into `evaluation.probes` (an oracle scores
100, a blind model chance), and every certificate holds when re-executed."""

from __future__ import annotations

import itertools
import os

import numpy as np
import orjson
import pytest
from PIL import Image

from hardneg.core.certify import Certifier, path_of
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.io import read_jsonl
from hardneg.core.records import PathNode
from hardneg.core.runner.folder import stored_config
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.evaluation.probes import group_scores, probe_accuracy
from tests.export_run import certifier, export_run, graphs, records

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
    kinds = {"probe_r/predicate", "probe_r/subject", "probe_r/subject_only", "probe_r/swapped_subject"}
    assert {r["kind"] for r in probe_r} == kinds
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
    g, words, cert = graphs(root), Words.load(), certifier(root)
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
        if r["kind"] == "probe_r/predicate":  # never seen with the pair (the paper), false here (certified above)
            r2 = r["swap"]["relation"][1]
            assert counts.triples[(s, r2, o)] == 0 and r2 != rel
        elif r["kind"] == "probe_r/subject":  # never seen in the triple, and not in the anchor image at all
            s2 = r["swap"]["subject"][1]
            assert counts.triples[(s2, rel, o)] == 0 and cert.nothing(path_of(s2), image) is None, r
        elif r["kind"] == "probe_r/swapped_subject":  # the swapped subject is there, nothing that could be ours
            assert any(x.name == true.name for x in image.objects.values()) and false.name == s
            assert not any(cert.could_be(x.name, s) for x in image.objects.values())
        else:  # subject-only: the subject is there, nothing that could be the object is
            assert any(x.name == s for x in image.objects.values())
            assert not any(cert.could_be(x.name, o) for x in image.objects.values())


def test_probe_c_certificates(probe_c):
    root = export_run()
    g, words, cert = graphs(root), Words.load(), certifier(root)
    splits = stored_config(root).splits
    for r in probe_c:
        x1, x2 = (g[i] for i in r["image_ids"])
        p1, p2 = (PathNode.from_json(p) for p in r["certificate"]["true"])
        assert execute(p1, GraphIndex(x1, TABLE)) and execute(p2, GraphIndex(x2, TABLE)), r
        assert cert.nothing(p2, x1) is None and cert.nothing(p1, x2) is None, r
        assert {split_of(i, splits) for i in r["image_ids"]} == {r["split"]} and x1.image_id != x2.image_id
        if r["kind"] == "probe_c/composition":
            a, anti = r["swap"]["attribute"]
            assert words.attributes_contradict(a, anti)[0]  # its antonym, or another of its category
            assert words.antonym(a) == anti or words.attribute_category(a) == words.attribute_category(anti)
            assert r["category"] == words.attribute_category(a)
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
    from hardneg.core.words.table import Words
    from hardneg.exports.common import noun_phrase, relation_prompt

    words = Words.load()
    assert relation_prompt(words, "house", "on", "ground") == "a house on the ground"  # not "on ground"
    assert relation_prompt(words, "apple", "on", "table") == "an apple on a table"
    assert noun_phrase(words, "bananas") == "bananas"
    assert noun_phrase(words, "dog", ("small",)) == "a small dog"


# -- the paper's own layout, read as its evaluation scripts read it ------------------------------------------

OFFICIAL_R_KEYS = {
    "positive_image_ids": list,
    "negative_image_ids": list,
    "positive_prompt": str,
    "negative_prompt": str,
    "negative_object": str,
    "positive_object": str,
    "negative_predicate_prompt": str,
}
OFFICIAL_C_KEYS = ("img1_id", "img1_prompt", "img1_composition", "img1_object", "img2_id", "img2_prompt",
                   "img2_composition", "img2_object")  # fmt: skip


def _photo(prompt: str) -> bool:
    """The paper's prompt form: "A photo of a small dog." """
    return prompt.startswith("A photo of ") and prompt.endswith(".") and len(prompt) > len("A photo of .")


def _coco(root, image_id) -> object:
    """Where the Probe-C and Probe-B scripts look for an image: COCO val2014's naming, the id zero-padded."""
    return root / f"COCO_val2014_{str(image_id).zfill(12)}.jpg"


def read_official_r(annot_dir, image_root) -> list[tuple]:
    """The relation script's reading: `<annot>/data/visual_genome/relation_eval_subject.json`, an object keyed
    by image id; per key the anchor `<root>/<key>.jpg`, the two image lists, the prompts and the two
    subject-only prompts it builds as "A photo of " + object + "." (each image set is stacked, 10 per set)."""
    annotations = orjson.loads((annot_dir / "data" / "visual_genome" / "relation_eval_subject.json").read_bytes())
    assert isinstance(annotations, dict)
    out = []
    for key, a in annotations.items():
        for k, t in OFFICIAL_R_KEYS.items():
            assert isinstance(a[k], t), (key, k)
        images = [image_root / f"{i}.jpg" for i in (key, *a["positive_image_ids"], *a["negative_image_ids"])]
        assert all(p.is_file() for p in images), key
        assert len(a["positive_image_ids"]) == len(a["negative_image_ids"]) == 10  # reshaped to (1, 10, dims)
        prompts = [a[k] for k in ("positive_prompt", "negative_prompt", "negative_predicate_prompt")]
        prompts += [f"A photo of {a['positive_object']}.", f"A photo of {a['negative_object']}."]
        assert all(_photo(p) for p in prompts) and len(set(prompts)) == 5, a
        out.append((key, a, prompts))
    return out


def test_probe_r_in_the_papers_layout():
    root = export_run()
    probes = root / "probes"
    counts = Counts.from_rows(read_jsonl(root / "work" / "plausibility" / "counts-all.jsonl"))
    total = 0
    for split in ("train", "val", "test"):
        for key, a, _ in read_official_r(probes / "probe_r" / split, probes / "probe_r" / "images"):
            ours = a["hardneg"]
            s, _, o = ours["triple"]
            assert ours["split"] == split and key.split(".rel")[0] == ours["image_id"]
            r2 = ours["predicate_swap"][1]
            assert counts.triples[(s, r2, o)] == 0  # the swapped predicate is never seen with the pair
            assert ours["predicate_plausibility"]["subject_relation"] == counts.subject_relation[(s, r2)]
            assert ours["subject_swap"][0] == s and a["negative_object"].endswith(ours["subject_swap"][1])
            assert 1 <= ours["distinct"]["positive_image_ids"] <= 10 and ours["distinct"]["negative_image_ids"] >= 1
            assert set(a["positive_image_ids"]) == set(ours["subject_only_image_ids"])  # repeated in turn
            total += 1
    summary = orjson.loads((probes / "summary.json").read_bytes())
    assert total == sum(v["records"] for v in summary["official"]["probe_r"].values())


def test_probe_r_image_sets_are_ten_distinct_images_without_the_anchors_objects_where_the_corpus_has_them():
    """The paper's subject-only images show the subject and no other object of the anchor image; here those
    come first, then, where the split has too few, others (never one that could show the object); and a set
    repeats images only when the split has fewer than ten that pass."""
    root = export_run()
    g, cert = graphs(root), certifier(root)
    splits = stored_config(root).splits
    words = Words.load()
    sets = 0
    for split in ("train", "val", "test"):
        annot = root / "probes" / "probe_r" / split / "data" / "visual_genome" / "relation_eval_subject.json"
        for a in orjson.loads(annot.read_bytes()).values():
            ours = a["hardneg"]
            s, rel, o = ours["triple"]
            anchor = g[ours["image_id"]]
            others = {x.name for x in anchor.objects.values() if not words.is_crowd(x.name)} - {s}
            chosen = ours["subject_only_image_ids"]
            assert len(set(chosen)) == len(chosen) == ours["distinct"]["positive_image_ids"]
            passing, clean = [], []
            false = path_of(s, relation=rel, obj=o)
            for j, h in g.items():
                names = {x.name for x in h.objects.values()}
                if j == anchor.image_id or split_of(j, splits) != split or s not in names:
                    continue
                if any(cert.could_be(n, o) for n in names) or cert.nothing(false, h) is not None:
                    continue
                passing.append(j)
                if not names & others:
                    clean.append(j)
            assert set(chosen) <= set(passing) and len(chosen) == min(10, len(passing)), (a, passing)
            if len(clean) >= len(chosen):
                assert set(chosen) <= set(clean), (chosen, clean)
            else:
                assert set(clean) <= set(chosen)
            sets += 1
    assert sets >= 5


def test_probe_r_records_repeat_small_image_sets_and_key_each_triple():
    from hardneg.exports.probes.official import probe_r_records
    from hardneg.exports.rows import ProbeRSetRow

    words, placed = Words.load(), []
    pred = {"swapped": "a cup under a table", "swap": {"relation": ["on", "under"]}, "certificate": {},
            "plausibility": {"subject_relation": 0, "relation_object": 3, "logp": -9.0}}  # fmt: skip
    sub = {"swapped": "a dog on a table", "swap": {"subject": ["cup", "dog"]}, "certificate": {}}
    base = {"split": "test", "positive_id": 1, "image_id": "7", "correct": "a cup on a table", "predicate": pred,
            "subject": sub, "subject_only_ids": ["8", "9"], "swapped_subject_ids": ["10"]}  # fmt: skip
    sets = [ProbeRSetRow(**base, triple=["cup", "on", "table"]), ProbeRSetRow(**base, triple=["cup", "near", "table"])]
    out = probe_r_records([*sets, sets[0]], words, lambda i, stem: placed.append((i, stem)))["test"]
    assert list(out) == ["7", "7.rel2"]  # one key per triple, a repeated triple once
    a = out["7"]
    assert a["positive_image_ids"] == ["8", "9"] * 5 and a["negative_image_ids"] == ["10"] * 10
    assert a["positive_prompt"] == "A photo of a cup on a table." and a["positive_object"] == "a cup"
    assert a["negative_predicate_prompt"] == "A photo of a cup under a table."
    assert ("7", "7.rel2") in placed and ("10", "10") in placed


def test_probe_c_in_the_papers_layout(probe_c):
    probes = export_run() / "probes"
    words, n = Words.load(), 0
    for split in ("train", "val", "test"):
        for name, kind in (("data_compositional_switch.json", "composition"), ("data_object_switch.json", "object")):
            rows = orjson.loads((probes / "probe_c" / split / name).read_bytes())  # the script's json.load
            assert isinstance(rows, list)
            for a in rows:
                assert all(isinstance(a[k], str) for k in OFFICIAL_C_KEYS), a
                for k in (1, 2):
                    assert _coco(probes / "probe_c" / "images", a[f"img{k}_id"]).is_file()
                    assert _photo(a[f"img{k}_prompt"])
                    assert a[f"img{k}_prompt"].endswith(f"{a[f'img{k}_composition']} {a[f'img{k}_object']}.")
                assert a["img1_id"] != a["img2_id"] and a["img1_prompt"] != a["img2_prompt"]
                if kind == "composition":  # the attribute swapped, the object kept
                    assert a["img1_object"] == a["img2_object"]
                    assert words.attributes_contradict(a["img1_composition"], a["img2_composition"])[0]
                else:
                    assert a["img1_composition"] == a["img2_composition"] and a["img1_object"] != a["img2_object"]
                assert a["hardneg"]["kind"] == f"probe_c/{kind}" and a["hardneg"]["split"] == split
                n += 1
    assert n == len(probe_c) > 0


def test_probe_c_composition_spreads_over_attribute_categories(probe_c):
    from collections import Counter

    comp = [r for r in probe_c if r["kind"] == "probe_c/composition"]
    cats = Counter(r["category"] for r in comp)
    assert len(cats) >= 2, cats  # not sizes alone
    share = stored_config(export_run()).exports.probes.max_category_share
    for split in ("train", "val", "test"):
        c = Counter(r["category"] for r in comp if r["split"] == split)
        if len(c) > 1:
            assert max(c.values()) <= share * sum(c.values()) + 1, (split, c)


def test_probe_b_in_the_papers_layout(probe_b):
    import pandas as pd

    probes = export_run() / "probes"
    cfg = stored_config(export_run())
    for split in sorted({g["split"] for g in probe_b}):
        base = probes / "probe_b" / split
        classes = pd.read_csv(base / "context" / "prompt_classes.csv")  # the script's read
        names = np.array(classes["class"].values)
        assert list(classes.columns) == ["class", "prompt"] and len(names) == len(set(names)) >= 5
        assert all(_photo(p) for p in classes["prompt"].values)
        rows = orjson.loads((base / "context" / "background_context_dataset.json").read_bytes())
        assert rows
        for fill in cfg.exports.probe_b.fillers:
            patched = set(os.listdir(base / "val2014_random_patch_dataset" / fill))
            for a in (a for a in rows if a["image"] in patched):  # the script keeps the patched ones
                assert a["image"] == _coco(base, a["image_id"]).name
                for folder in ("val2014", f"val2014_random_patch_dataset/{fill}",
                               f"val2014_background_removed_dataset/segmentation_mask/{fill}"):  # fmt: skip
                    assert _coco(base / folder, a["image_id"]).is_file()
                labels = [np.where(names == c)[0] for c in a["annotations"]]
                assert labels and all(len(x) == 1 for x in labels)  # every label a class, at least one


def test_probe_b_cooccurrence_split_is_the_target_alone_big_enough_to_see(probe_b):
    """Probe-B's object-only split in the layout `eval_cooccurence_understanding.py` reads: per image the
    target's class and the others it shows, the target alone on each filler; never a target too small to
    recognise on its own (the paper keeps single objects "not too small relative to the image size")."""
    probes = export_run() / "probes"
    cfg = stored_config(export_run()).exports.probe_b
    n = 0
    for split in cfg.splits:
        base = probes / "probe_b" / split
        context = {
            a["image_id"]: a for a in orjson.loads((base / "context" / "background_context_dataset.json").read_bytes())
        }
        for a in orjson.loads((base / "context" / "object_context_dataset.json").read_bytes()):
            assert isinstance(a["image_id"], int) and a["path"] == f"{a['object']}_{_coco(base, a['image_id']).name}"
            assert {a["object"], *a["other_objects"]} == set(context[a["image_id"]]["annotations"])
            w, h = a["hardneg"]["target"]["box"][2:]
            size = Image.open(_coco(base / "val2014", a["image_id"])).size
            assert w * h >= cfg.min_object_area * size[0] * size[1]
            for fill in a["hardneg"]["fillers"]:
                assert (
                    base
                    / "val2014_background_removed_and_cooccurrence_dataset"
                    / "segmentation_mask"
                    / fill
                    / a["path"]
                ).is_file()
            n += 1
    assert n >= 1


def test_probe_b_class_list_names_distinct_things():
    from hardneg.exports.probes.official import class_list

    words = Words.load()
    counts = Counts()
    for name, n in {"dog": 9, "dogs": 8, "animal": 7, "sky": 30, "nan": 6, "car": 5, "wheel": 5, "rare": 1}.items():
        counts.names[name] = n
    classes = class_list(counts, words, Certifier(words, TABLE), 2)
    assert classes[0] == "dog" and "dogs" not in classes and "animal" not in classes  # forms and kinds of one
    assert "sky" not in classes and "nan" not in classes and "rare" not in classes
    assert "car" in classes and "wheel" not in classes  # a part of a class


def test_a_subject_swap_without_swapped_subject_images_is_kept_without_them():
    """Regression (100 real GQA graphs): a subject whose absence proves nothing (a crowd name) gets no
    swapped-subject image probes; the certified subject swap still counts, instead of a KeyError."""
    from hardneg.exports.corpus import Candidates
    from hardneg.exports.probes.options import SwapOption
    from hardneg.exports.probes.relation_composition import ProbeSearch, RelationProbes

    def won(fields: dict, *options: SwapOption) -> Candidates[SwapOption]:
        probe = Candidates[SwapOption](fields, max(1, len(options)))
        for o in options:
            probe.add(lambda o=o: o)  # certified on the positive's own image: no test left
        probe.start()
        return probe

    swap = SwapOption("the cupcake on the table", "subject", "cake", "cupcake", {})
    rp = RelationProbes({"image_id": "1"}, won({"kind": "probe_r/predicate"}), won({}, swap), None, swapped={})
    search = ProbeSearch.__new__(ProbeSearch)
    search.subject_only = 3
    chosen = {kind: options for kind, _, options in search._chosen(rp)}
    assert chosen == {"probe_r/predicate": [], "probe_r/subject": [swap]}


def test_drawing_from_the_sorted_index_draws_what_a_sorted_copy_would():
    """The corpus index keeps its image lists sorted once, and leaves one image out without copying: the
    keyed draws must be the ones a fresh sorted copy gives (the exports stay the same), for small pools
    (which `random.sample` copies) and large ones (which it indexes)."""
    from hardneg.exports.corpus import SortedIds, sample

    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 30, 400):
        ids = [f"{i:05d}" for i in rng.choice(100_000, n, replace=False)]
        pool = SortedIds.of(ids[::-1])
        assert list(pool) == sorted(ids)
        for left_out in [*ids[:3], "not-there"]:
            rest = [i for i in ids if i != left_out]
            view = pool.without(left_out)
            assert list(view) == sorted(rest) and len(view) == len(rest)
            for k in (1, 3, 10, 50):
                assert sample(view, k, 7, "key", left_out) == sample(rest, k, 7, "key", left_out)
