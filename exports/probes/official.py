"""The probes in the probing paper's own layout, so that its evaluation scripts read them unchanged.

Per split, under `RUN/probes/` (each script's arguments in parentheses):
- Probe-R (`eval_relation_understanding.py --annot_dir probe_r/<split> --root_image_dir probe_r/images`):
  `probe_r/<split>/data/visual_genome/relation_eval_subject.json`, a JSON object keyed by the anchor
  image's file stem (`images/<key>.jpg`), each record with `positive_image_ids` (images of the subject
  alone), `negative_image_ids` (images of the swapped subject), `positive_prompt`, `negative_prompt`
  (subject swapped), `negative_predicate_prompt`, `positive_object` and `negative_object`. The script
  stacks exactly `IMAGES` image features per set, so a set the corpus fills with fewer distinct images
  repeats them in turn (`hardneg.distinct` says how many are distinct). One image probed on several
  triples gets one key per triple (`<id>.rel2`, a second link to the same image).
- Probe-C (`eval_compositional_understanding.py --annot_dir probe_c/<split> --root_image_dir
  probe_c/images`): `data_compositional_switch.json` and `data_object_switch.json`, JSON arrays of
  `img1_id`, `img1_prompt`, `img1_composition`, `img1_object` and the same for `img2`; the images are
  named as the script names COCO's (`COCO_val2014_<id, zero-padded to 12>.jpg`).
- Probe-B (`eval_context_understanding.py --annot_dir probe_b/<split>/context --root_image_orig_dir
  probe_b/<split>/val2014 --root_image_patch_dir probe_b/<split>/val2014_random_patch_dataset
  --root_image_mod_dir probe_b/<split>/val2014_background_removed_dataset --fill_type <filler>`):
  `context/background_context_dataset.json` (per image the classes it shows), `context/prompt_classes.csv`
  (`class`, `prompt`: the corpus's object names, `class_list`), and the originals, the patched images per
  filler and the BMR images per filler under `segmentation_mask/<filler>/`.
Our own fields (ids, split, swaps, certificates, plausibility) ride along under the key `hardneg`, which
the scripts never read; prompts read "A photo of a small dog." as the paper's do.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from PIL import Image

from hardneg.core.certify import Certifier
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.ids import safe_name
from hardneg.core.io import atomic_write_bytes, write_json
from hardneg.core.words.table import Words
from hardneg.exports.common import ExportFolder, noun_phrase
from hardneg.exports.probes.options import SwapOption
from hardneg.exports.rows import ProbeBGroupRow, ProbeCRow, ProbeRSetRow

IMAGES = 10  # images per Probe-R image set: the script reshapes each set's features to exactly 10
R_FILE = "data/visual_genome/relation_eval_subject.json"
C_FILES = {"probe_c/composition": "data_compositional_switch.json", "probe_c/object": "data_object_switch.json"}
B_ORIGINAL, B_PATCH, B_MOD = "val2014", "val2014_random_patch_dataset", "val2014_background_removed_dataset"
B_OBJECT = "val2014_background_removed_and_cooccurrence_dataset"  # Probe-B's object-only images (BR)
MASK = "segmentation_mask"  # the folder the scripts look in under the BMR and BR folders
CLASS_NAME = re.compile(r"[a-z][a-z' -]*[a-z]")  # what pandas reads back as the same string
NA_WORDS = frozenset({"na", "nan", "null", "none", "nat", "n a"})  # pandas reads these as missing
CERTAINLY = frozenset({"same", "plural", "synonym", "hyponym"})  # name_relation(object, class): it is one


def photo(phrase: str) -> str:
    """The paper's prompt: "A photo of a small dog." """
    return f"A photo of {phrase}."


def coco_file(image_id: str) -> str:
    """The file name the Probe-C and Probe-B scripts open for an image id (COCO val2014 style)."""
    return f"COCO_val2014_{safe_name(image_id).zfill(12)}.jpg"


def _pad(ids: list[str], n: int) -> list[str]:
    """`ids` repeated in turn up to `n` (the script averages a set's features and expects `n` of them)."""
    return list(islice(cycle(ids), n)) if ids else []


# -- Probe-R --------------------------------------------------------------------------------------------


def probe_r_records(
    sets: Iterable[ProbeRSetRow], words: Words, link: Callable[[str, str], None]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per split, the paper's Probe-R records keyed by anchor file stem; `link(image_id, stem)` places an
    image at `images/<stem>.jpg`. One record per (anchor image, triple); sets come in a stable order."""
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    seen: set[tuple[str, ...]] = set()
    per_image: dict[str, int] = defaultdict(int)
    for s in sets:
        subj, rel, obj = s.triple
        if (key := (s.image_id, subj, rel, obj)) in seen:
            continue
        seen.add(key)
        per_image[s.image_id] += 1
        k = per_image[s.image_id]
        stem = safe_name(s.image_id) + (f".rel{k}" if k > 1 else "")
        link(s.image_id, stem)
        for i in (*s.subject_only_ids, *s.swapped_subject_ids):
            link(i, safe_name(i))
        pred, sub = SwapOption.from_json(s.predicate), SwapOption.from_json(s.subject)
        s2 = sub.new
        out[s.split][stem] = {
            "positive_image_ids": _pad([safe_name(i) for i in s.subject_only_ids], IMAGES),
            "negative_image_ids": _pad([safe_name(i) for i in s.swapped_subject_ids], IMAGES),
            "positive_prompt": photo(s.correct),
            "negative_prompt": photo(sub.swapped),
            "negative_object": noun_phrase(words, s2),
            "positive_object": noun_phrase(words, subj),
            "negative_predicate_prompt": photo(pred.swapped),
            "hardneg": {
                "split": s.split,
                "positive_id": s.positive_id,
                "image_id": s.image_id,
                "triple": s.triple,
                "predicate_swap": [pred.old, pred.new],
                "predicate_plausibility": pred.plausibility,
                "subject_swap": [sub.old, sub.new],
                "subject_only_image_ids": s.subject_only_ids,
                "swapped_subject_image_ids": s.swapped_subject_ids,
                "distinct": {
                    "positive_image_ids": len(s.subject_only_ids),
                    "negative_image_ids": len(s.swapped_subject_ids),
                },
                "certificates": {"predicate": pred.certificate, "subject": sub.certificate},
            },
        }
    return out


# -- Probe-C --------------------------------------------------------------------------------------------


def probe_c_record(r: ProbeCRow) -> dict[str, Any]:
    """One 2 x 2 group as the paper's record: image i with its prompt, attribute and object."""
    out: dict[str, Any] = {}
    pairs = zip(r.image_ids, r.prompts, r.certificate["true"], strict=True)
    for k, (image_id, prompt, path) in enumerate(pairs, 1):
        out[f"img{k}_prompt"] = photo(prompt)
        out[f"img{k}_id"] = safe_name(image_id)
        out[f"img{k}_composition"] = " ".join(path["attributes"])
        out[f"img{k}_object"] = path["name"]
    keep = ("id", "kind", "split", "positive_id", "image_ids", "swap", "category", "certificate")
    row = r.to_row()  # `category` a composition group's only
    out["hardneg"] = {k: row[k] for k in keep if k in row}
    return out


# -- Probe-B --------------------------------------------------------------------------------------------


def class_list(counts: Counts, words: Words, cert: Certifier, min_count: int) -> list[str]:
    """Probe-B's classes: the corpus's object names seen at least `min_count` times, most frequent first,
    that can be claimed absent (no crowd, mass or non-object name, a noun category known), written as
    pandas reads them back, and no two of which name one thing (a form, kind, part or whole of another):
    a class an image shows under another class's name would count as a false alarm."""
    out: list[str] = []
    for name, n in sorted(counts.names.items(), key=lambda x: (-x[1], x[0])):
        if n < min_count or not CLASS_NAME.fullmatch(name) or name in NA_WORDS:
            continue
        if cert.absence_refusal(name) is not None or words.name_category(name) is None:
            continue
        if any(words.name_relation(name, c) is not None for c in out):
            continue
        out.append(name)
    return out


class ClassLabels:
    """Which classes an image certainly shows, and which it may show unannotated (then it is left out)."""

    def __init__(self, classes: list[str], words: Words, cert: Certifier) -> None:
        self.classes, self.words, self.cert = classes, words, cert
        self._is: dict[str, frozenset[str]] = {}
        self._may: dict[str, frozenset[str]] = {}

    def certainly(self, name: str) -> frozenset[str]:
        """The classes an object called `name` is (itself, a plural, a synonym, a broader class)."""
        if name not in self._is:
            self._is[name] = frozenset(
                c for c in self.classes if c == name or self.words.name_relation(name, c) in CERTAINLY
            )
        return self._is[name]

    def maybe(self, name: str) -> frozenset[str]:
        """The classes an object called `name` could be (a "person" may be the class "man"), or could
        bring along unannotated (its parts, the other parts of its whole: a car's wheel)."""
        if name not in self._may:
            w = self.words
            self._may[name] = frozenset(
                c
                for c in self.classes
                if self.cert.could_be(name, c) or w.name_relation(c, name) == "part" or w.shares_whole(c, name)
            )
        return self._may[name]

    def labels(self, kept: Iterable[str], shown: Iterable[str]) -> dict[str, list[str]] | None:
        """Class -> the kept names that are it; None when something shown (annotated anywhere in the
        image or the filler) could be a class no kept object certainly is: its label would be a guess."""
        out: dict[str, list[str]] = defaultdict(list)
        for n in sorted(set(kept)):
            for c in self.certainly(n):
                out[c].append(n)
        if not out or any(self.maybe(n) - out.keys() for n in shown):
            return None
        return dict(sorted(out.items()))


def coco_number(image_id: str) -> int:
    """The integer the Probe-B scripts read an image's id as (one of them parses it back from the file name):
    the id itself when it is a plain decimal number, else a 13-digit number from its hash (above any GQA id)."""
    if image_id.isascii() and image_id.isdigit() and (image_id == "0" or not image_id.startswith("0")):
        return int(image_id)
    digest = hashlib.sha1(image_id.encode("utf-8", "surrogatepass")).digest()
    return 10**12 + int.from_bytes(digest[:8], "big") % (9 * 10**12)


def script_label(prompt: str) -> str:
    """The class the co-occurrence script reads back from a prompt (it strips "A photo of a " and the dots):
    an object whose prompt does not read back as its class gets no label there, and the script fails."""
    return prompt.replace("A photo of a ", "").replace(".", "")


def probe_b_tree(
    folder: ExportFolder, root: Path, groups: list[ProbeBGroupRow], labels: ClassLabels, words: Words,
    names_of: Callable[[str], Iterable[str]], splits: Iterable[str], fillers: Iterable[str], min_area: float = 0.0,
) -> dict[str, dict[str, int]]:  # fmt: skip
    """Write Probe-B's files per split of `splits` (each filler's folders even when empty, so that both
    scripts run to 0 items); returns per split the images and co-occurrence records written and what was
    left out."""
    counts: dict[str, dict[str, int]] = {}
    fillers = list(fillers)
    prompts = {c: photo(noun_phrase(words, c)) for c in labels.classes}
    for split in splits:
        base = f"probe_b/{split}"
        for fill in fillers:
            for sub in (f"{B_PATCH}/{fill}", f"{B_MOD}/{MASK}/{fill}", f"{B_OBJECT}/{MASK}/{fill}"):
                (folder.dir / base / sub).mkdir(parents=True, exist_ok=True)
        (folder.dir / base / B_ORIGINAL).mkdir(parents=True, exist_ok=True)
        records, objects, tally = [], [], defaultdict(int)
        for g in (g for g in groups if g.split == split):
            present = labels.labels(g.present, names_of(g.image_id))
            if present is None:
                tally["left_out:labels"] += 1
                continue
            number = coco_number(g.image_id)
            name = f"COCO_val2014_{str(number).zfill(12)}.jpg"
            folder.place(root / g.images["x0"], f"{base}/{B_ORIGINAL}/{name}")
            target = _target_class(g, present, labels)
            readable = all(script_label(prompts[c]) == c for c in present)
            big = _share(root / g.images["x0"], g.target["box"]) >= min_area
            alone = target is not None and readable and big
            if target is None:
                tally["left_out:cooccurrence_class"] += 1
            elif not readable:
                tally["left_out:cooccurrence_prompt"] += 1  # the script reads back no label for one of them
            elif not big:
                tally["left_out:cooccurrence_small"] += 1
            fills = []
            for fill in g.fillers:
                if fill == "scene" and labels.labels(g.present, g.scene_names) is None:
                    tally["left_out:scene"] += 1  # the filler scene may show a class: not in its folder
                    continue
                folder.place(root / g.images[f"x0_patch/{fill}"], f"{base}/{B_PATCH}/{fill}/{name}")
                folder.place(root / g.images[f"bmr/{fill}"], f"{base}/{B_MOD}/segmentation_mask/{fill}/{name}")
                if alone:
                    rel = f"{base}/{B_OBJECT}/segmentation_mask/{fill}/{target}_{name}"
                    folder.place(root / g.images[f"br/{fill}"], rel)
                fills.append(fill)
                tally[f"images:{fill}"] += 1
            ours = {"id": g.id, "split": split, "image_id": g.image_id, "target": g.target,
                    "fillers": fills, "images": g.images}  # fmt: skip
            records.append({
                "annotations": {c: [{"name": n} for n in ns] for c, ns in present.items()},
                "image": name,
                "image_id": number,
                "hardneg": ours,
            })  # fmt: skip
            if alone:
                others = sorted(present.keys() - {target})
                rec = {"image_id": number, "object": target, "other_objects": others, "path": f"{target}_{name}"}
                objects.append({**rec, "hardneg": ours})
        write_json(folder.dir / base / "context" / "background_context_dataset.json", records)
        write_json(folder.dir / base / "context" / "object_context_dataset.json", objects)
        write_classes(folder.dir / base / "context" / "prompt_classes.csv", labels.classes, words)
        counts[split] = {"images": len(records), "cooccurrence": len(objects), **dict(sorted(tally.items()))}
    return counts


def _share(image: Path, box: list[int]) -> float:
    """The share of the image a box covers."""
    with Image.open(image) as im:
        w, h = im.size
    return box[2] * box[3] / max(w * h, 1)


def _target_class(g: ProbeBGroupRow, present: dict[str, list[str]], labels: ClassLabels) -> str | None:
    """The one class the target certainly is (Probe-B's co-occurrence split asks for it on the image that
    keeps the target alone), or None when it is none or several."""
    mine = labels.certainly(g.target["name"]) & present.keys()
    return next(iter(mine)) if len(mine) == 1 else None


def write_classes(path: Path, classes: list[str], words: Words) -> None:
    """`prompt_classes.csv`: `class` and its prompt "A photo of a dog." (pandas reads it back as is)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["class", "prompt"])
    for c in classes:
        w.writerow([c, photo(noun_phrase(words, c))])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue().encode())
