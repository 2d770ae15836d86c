"""A synthetic GQA-like scene-graph corpus, for benchmarks and memory tests.

Writes ONE JSON object of image id -> graph in the format of GQA's `train_sceneGraphs.json`,
streamed image by image so the corpus never sits in memory. Statistics follow GQA
train: ~16 objects and ~50 relations per image (Poisson, relations scaled with the object count),
Zipf-like names from a few hundred GQA-like names (stuff and part names included), 0-3 attributes per
object drawn mostly from `templates/attribute_categories.json` (colors most common), relation names
with GQA's skew ("to the left of"/"to the right of" ~55% of edges, always stored in both directions),
integer boxes with a few percent spilling past the image edge, image sizes mostly 500 x 333..500.
Deterministic for a seed. The output is compact JSON (the real file has spaces after `,` and `:`).

    python -m benchmarks.synthetic_gqa OUT.json --n-images N --seed S
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

log = logging.getLogger(__name__)

GENERATOR_VERSION = "synthetic_gqa@v1"  # bump when the output for a seed changes (benchmark caches key on it)

ATTRIBUTE_TABLE = Path(__file__).resolve().parent.parent / "templates" / "attribute_categories.json"

# Roughly in GQA train frequency order (stuff and part names included); the Zipf draw makes the head
# dominate.
# fmt: off
NAMES: tuple[str, ...] = (
    "man", "window", "shirt", "tree", "wall", "building", "person", "ground", "sky", "sign", "head",
    "pole", "hand", "grass", "hair", "leg", "car", "woman", "leaves", "table", "trees", "ear", "pants",
    "people", "eye", "water", "door", "fence", "nose", "wheel", "chair", "floor", "arm", "jacket", "hat",
    "shadow", "line", "plate", "boy", "cloud", "girl", "field", "shoe", "tail", "leaf", "clouds", "face",
    "letter", "plant", "windows", "street", "bush", "snow", "background", "road", "light", "sidewalk",
    "giraffe", "train", "helmet", "dog", "shorts", "bag", "roof", "cat", "elephant", "horse", "mouth",
    "umbrella", "bus", "glass", "sand", "bench", "bowl", "lines", "hill", "logo", "picture", "rock",
    "boat", "cap", "shelf", "post", "box", "fur", "bottle", "house", "handle", "mirror", "lamp", "food",
    "zebra", "cow", "bike", "pizza", "tire", "sheep", "wave", "tile", "letters", "kite", "number",
    "glasses", "stripe", "book", "spots", "flowers", "flower", "ocean", "neck", "cup", "feet", "counter",
    "frisbee", "curtain", "skateboard", "dirt", "clock", "airplane", "motorcycle", "wing", "banana",
    "tracks", "coat", "board", "beach", "vase", "container", "vehicle", "child", "trunk", "top",
    "sneakers", "mountain", "stone", "pillow", "sock", "player", "skier", "paper", "cabinet", "bed",
    "boots", "truck", "branch", "headlight", "ski", "napkin", "knife", "fork", "spoon", "donut", "cake",
    "sandwich", "broccoli", "carrot", "orange", "apple", "bread", "cheese", "tomato", "onion", "lettuce",
    "meat", "sauce", "rice", "keyboard", "laptop", "monitor", "screen", "phone", "television", "speaker",
    "cord", "wire", "toilet", "sink", "faucet", "towel", "bathtub", "refrigerator", "oven", "microwave",
    "stove", "drawer", "outlet", "switch", "fan", "ceiling", "carpet", "rug", "blanket", "sheet", "couch",
    "sofa", "cushion", "desk", "shelves", "basket", "pot", "pan", "tray", "jar", "can", "candle", "toy",
    "doll", "ball", "bat", "glove", "uniform", "jersey", "dress", "skirt", "sweater", "vest", "scarf",
    "tie", "belt", "watch", "bracelet", "necklace", "purse", "backpack", "suitcase", "luggage",
    "wristband", "sunglasses", "beard", "mustache", "finger", "thumb", "knee", "shoulder", "lady", "guy",
    "kid", "baby", "mane", "horn", "hoof", "paw", "beak", "feather", "bird", "duck", "goose", "pigeon",
    "bear", "runway", "tarmac", "platform", "station", "railroad", "bridge", "river", "lake", "pond",
    "hillside", "forest", "mountains", "weeds", "bushes", "shrub", "hedge", "log", "stick", "branches",
    "twig", "path", "trail", "crosswalk", "curb", "antenna", "chimney", "balcony", "tower", "column",
    "pillar", "arch", "statue", "fountain", "flag", "banner", "poster", "billboard", "awning", "tent",
    "windshield", "bumper", "taillight", "seat", "dashboard", "mast", "sail", "dock", "pier", "surfboard",
    "wetsuit", "racket", "net", "court", "fans", "crowd", "catcher", "umpire", "batter", "base", "mitt",
    "bleachers", "scoreboard", "skis", "vault", "slope", "lift", "goggles", "jeans", "boot", "heel",
    "collar", "sleeve", "pocket", "button", "zipper", "strap", "hood", "lid", "cover", "label", "sticker",
    "wrapper", "tag", "vegetables", "fruit", "berries", "grapes", "lemon", "lime", "peppers", "potato",
    "fries", "egg", "bacon", "sausage", "ham", "noodles", "soup", "salad", "pie", "cookie", "muffin",
    "dessert", "icing", "crust", "topping", "olive", "mushroom", "spinach", "beans", "corn", "pepper",
    "tennis racket", "tennis ball", "hot dog", "traffic light", "street light", "stop sign",
    "fire hydrant", "parking lot", "license plate", "remote control", "teddy bear", "cell phone",
    "computer mouse", "power line", "door knob", "picnic",
)
# fmt: on

LEFT, RIGHT = "to the left of", "to the right of"
# Everything else, in GQA frequency order (Zipf weights below).
# fmt: off
OTHER_RELATIONS: tuple[str, ...] = (
    "on", "wearing", "of", "near", "in", "behind", "in front of", "holding", "has", "next to", "above",
    "on top of", "below", "under", "beside", "sitting on", "standing on", "carrying", "by", "with",
    "riding", "walking on", "covered by", "hanging on", "eating", "looking at", "parked on", "full of",
    "watching", "lying on", "playing with", "inside", "surrounded by", "covering", "attached to", "along",
    "at", "beneath", "on the side of", "sitting in", "standing in", "surrounding", "filled with",
    "hitting", "throwing", "touching", "pulling", "grazing on", "leaning on", "growing on", "walking in",
    "swinging", "crossing", "driving", "flying in", "contain", "around", "mounted on", "reflected in",
    "printed on",
)
# fmt: on
LEFT_RIGHT_SHARE = 0.55  # of all edges; GQA train is ~50-60%
SPILL_RATE = 0.03  # boxes spilling past the image edge
N_ATTRS_P = (0.30, 0.40, 0.20, 0.10)  # P(0..3 attributes on an object)
CATEGORY_WEIGHTS = {
    "color": 0.45,
    "material": 0.10,
    "size": 0.10,
    "state": 0.07,
    "pose": 0.05,
    "shape": 0.04,
    "pattern": 0.03,
    "texture": 0.03,
    "age": 0.02,
    "position": 0.02,
}
OTHER_CATEGORY_WEIGHT = 0.04  # shared by the remaining categories
UNCATEGORISED_RATE = 0.05  # attributes absent from the table ("mostly from the table")
UNCATEGORISED = ("here", "partial", "visible", "framed", "tied", "decorative", "electric", "wild")
LOCATIONS = ("indoors", "outdoors")
WEATHERS = ("sunny", "cloudy", "overcast", "foggy", "rainy", "snowy")


def _zipf(n: int, s: float = 1.0) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


class _Vocab:
    """Names, attributes and relation names with their sampling weights."""

    def __init__(self, table_path: Path) -> None:
        cats: dict[str, list[str]] = orjson.loads(table_path.read_bytes())["categories"]
        self.names = np.array(NAMES, dtype=object)
        self.name_p = _zipf(len(NAMES), 0.75)
        self.other_rel = np.array(OTHER_RELATIONS, dtype=object)
        self.other_rel_p = _zipf(len(OTHER_RELATIONS), 1.1)
        rest = [c for c in cats if c not in CATEGORY_WEIGHTS]
        self.categories = [c for c in CATEGORY_WEIGHTS if c in cats] + rest
        w = np.array([CATEGORY_WEIGHTS.get(c, OTHER_CATEGORY_WEIGHT / max(len(rest), 1)) for c in self.categories])
        self.category_p = w / w.sum()
        self.by_category = [cats[c] for c in self.categories]
        self.by_category_p = [_zipf(len(cats[c]), 0.8) for c in self.categories]
        known = {a for v in cats.values() for a in v}
        self.uncategorised = [a for a in UNCATEGORISED if a not in known]


def _image_size(rng: np.random.Generator) -> tuple[int, int]:
    """Mostly 500 x 333..500, like GQA's Visual Genome images."""
    u = rng.random()
    common = int(rng.choice((333, 375, int(rng.integers(281, 500)))))
    if u < 0.68:
        return 500, common  # landscape
    if u < 0.93:
        return common, 500  # portrait
    return (500, 500) if u < 0.97 else (int(rng.integers(640, 1025)), int(rng.integers(480, 769)))


def _boxes(rng: np.random.Generator, n: int, width: int, height: int) -> np.ndarray:
    """n x 4 integer xywh boxes, a few spilling past the edge (never entirely outside)."""
    area = np.exp(rng.uniform(np.log(0.002), np.log(0.6), n)) * width * height
    aspect = np.exp(rng.uniform(np.log(0.3), np.log(3.0), n))
    w = np.clip(np.sqrt(area * aspect), 1, width).astype(np.int64)
    h = np.clip(np.sqrt(area / aspect), 1, height).astype(np.int64)
    x = (rng.random(n) * (width - w + 1)).astype(np.int64)
    y = (rng.random(n) * (height - h + 1)).astype(np.int64)
    spill = np.flatnonzero(rng.random(n) < SPILL_RATE)
    for i, side in zip(spill, rng.integers(0, 4, len(spill)), strict=True):
        # Shift past one edge by 1..half the box: clipping stays non-empty.
        if side == 0:
            x[i] = -int(rng.integers(1, w[i] // 2 + 2))
        elif side == 1:
            x[i] = width - w[i] + int(rng.integers(1, w[i] // 2 + 2))
        elif side == 2:
            y[i] = -int(rng.integers(1, h[i] // 2 + 2))
        else:
            y[i] = height - h[i] + int(rng.integers(1, h[i] // 2 + 2))
    return np.stack([x, y, w, h], axis=1)


def _attributes(rng: np.random.Generator, vocab: _Vocab, n: int) -> list[list[str]]:
    counts = rng.choice(len(N_ATTRS_P), size=n, p=N_ATTRS_P)
    total = int(counts.sum())
    cats = rng.choice(len(vocab.categories), size=total, p=vocab.category_p)
    uncategorised = rng.random(total) < UNCATEGORISED_RATE
    picks: list[str] = []
    for c, odd in zip(cats.tolist(), uncategorised.tolist(), strict=True):
        if odd and vocab.uncategorised:
            picks.append(vocab.uncategorised[int(rng.integers(len(vocab.uncategorised)))])
        else:
            opts = vocab.by_category[c]
            picks.append(opts[int(rng.choice(len(opts), p=vocab.by_category_p[c]))])
    out: list[list[str]] = []
    k = 0
    for c in counts.tolist():
        out.append(list(dict.fromkeys(picks[k : k + c])))  # no duplicates on one object
        k += c
    return out


def _graph(
    rng: np.random.Generator, vocab: _Vocab, first_id: int, objects_mean: float, relations_mean: float
) -> dict[str, Any]:
    width, height = _image_size(rng)
    n = max(1, int(rng.poisson(objects_mean)))
    ids = [str(first_id + i) for i in range(n)]
    names = rng.choice(vocab.names, size=n, p=vocab.name_p).tolist()
    boxes = _boxes(rng, n, width, height).tolist()
    attrs = _attributes(rng, vocab, n)
    rels: list[list[dict[str, str]]] = [[] for _ in range(n)]
    if n > 1:
        # More objects, more edges, as in GQA; the mean stays relations_mean.
        r = int(rng.poisson(relations_mean * n / objects_mean))
        pairs_i, pairs_j = np.triu_indices(n, 1)
        n_lr = min(int(rng.binomial(r, LEFT_RIGHT_SHARE)) // 2, len(pairs_i))
        chosen = rng.choice(len(pairs_i), size=n_lr, replace=False)
        seen: set[tuple[int, str, int]] = set()
        for i, j in zip(pairs_i[chosen].tolist(), pairs_j[chosen].tolist(), strict=True):
            ci, cj = boxes[i][0] + boxes[i][2] / 2, boxes[j][0] + boxes[j][2] / 2
            a, b = (i, j) if ci <= cj else (j, i)  # a is left of b, by box centres
            rels[a].append({"name": LEFT, "object": ids[b]})
            rels[b].append({"name": RIGHT, "object": ids[a]})
        n_other = max(r - 2 * n_lr, 0)
        subj = rng.integers(0, n, n_other)
        obj = (subj + rng.integers(1, n, n_other)) % n  # never a self-relation
        rnames = rng.choice(vocab.other_rel, size=n_other, p=vocab.other_rel_p)
        for s, o, name in zip(subj.tolist(), obj.tolist(), rnames.tolist(), strict=True):
            if (s, name, o) not in seen:
                seen.add((s, name, o))
                rels[s].append({"name": name, "object": ids[o]})
    graph: dict[str, Any] = {"width": width, "height": height}
    if rng.random() < 0.3:
        graph["location"] = LOCATIONS[int(rng.integers(len(LOCATIONS)))]
    if rng.random() < 0.15:
        graph["weather"] = WEATHERS[int(rng.integers(len(WEATHERS)))]
    graph["objects"] = {
        ids[i]: {
            "name": names[i],
            "x": boxes[i][0],
            "y": boxes[i][1],
            "w": boxes[i][2],
            "h": boxes[i][3],
            "attributes": attrs[i],
            "relations": rels[i],
        }
        for i in range(n)
    }
    return graph


def write_synthetic_gqa(
    path: str | Path,
    n_images: int = 74_942,
    seed: int = 0,
    objects_mean: float = 16,
    relations_mean: float = 50,
    attribute_table: str | Path = ATTRIBUTE_TABLE,
) -> Path:
    """Write a GQA-train-like `*_sceneGraphs.json` to `path`, image by image; returns the path.

    Written to a temporary name first, so an interrupted run never leaves a plausible half file.
    """
    if n_images < 0:
        raise ValueError(f"n_images must be >= 0, got {n_images}")
    if objects_mean <= 0 or relations_mean < 0:
        raise ValueError(f"objects_mean must be > 0 and relations_mean >= 0, got {objects_mean}, {relations_mean}")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    rng = np.random.default_rng(seed)
    vocab = _Vocab(Path(attribute_table))
    next_object = 1_000_000  # GQA object ids are 6-7 digit numeric strings
    try:
        with tmp.open("wb", buffering=1 << 20) as f:
            f.write(b"{")
            for k in range(n_images):
                # GQA ids are numeric strings, a few of them with an "n" prefix.
                image_id = f"n{100_000 + k}" if k % 10 == 9 else str(2_300_000 + k)
                graph = _graph(rng, vocab, next_object, objects_mean, relations_mean)
                next_object += len(graph["objects"])
                f.write(b"," if k else b"")
                f.write(orjson.dumps(image_id) + b":" + orjson.dumps(graph))
            f.write(b"}\n")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("wrote %d synthetic images to %s (%.1f MB)", n_images, out, out.stat().st_size / 1e6)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="output .json file")
    ap.add_argument("--n-images", type=int, default=74_942)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--objects-mean", type=float, default=16)
    ap.add_argument("--relations-mean", type=float, default=50)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    write_synthetic_gqa(args.out, args.n_images, args.seed, args.objects_mean, args.relations_mean)


if __name__ == "__main__":
    main()
