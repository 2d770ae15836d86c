"""Split assignment by a hash of the image id.

A sample's split depends only on its image id and the proportions, never on what else is in the run, so
adding images never moves old ones, and a negative always lands in its positive's split.
"""

from __future__ import annotations

import hashlib

from hardneg.core.config import SplitsConfig

SPLITS = ("train", "val", "test")  # the splits every run publishes, in order
SPLIT_SALT = "hardneg-split-v1"  # changing it reshuffles every split: bump deliberately


def image_unit(image_id: str) -> float:
    """A uniform number in [0, 1) derived from the image id."""
    digest = hashlib.sha1(f"{SPLIT_SALT}:{image_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_of(image_id: str, splits: SplitsConfig) -> str:
    u = image_unit(image_id)
    edge = 0.0
    last = "train"
    for name, share in splits.items():
        if share <= 0:
            continue
        edge += share
        last = name
        if u < edge:
            return name
    return last  # float rounding at the top edge
