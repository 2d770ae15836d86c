"""What the photo says about a colour claim: supported, contradicted or unknown, with the numbers behind it.

A scene graph's colour attribute is an annotator's word; the pixels are the evidence. This module turns an
object's colour reading (`core.colors.read_colours`, shares of its mask's pixels per colour term) into
verdicts on GQA's colour words:

- `judge_colour(reading, word)`: a positive whose colour the pixels contradict can be dropped; a colour
  text negative whose new colour the pixels support (or show on a large part) is still true.
- `reading.multicoloured` (via `multicoloured`): two or more large shares of colours that are not shades
  of one another (a red-and-yellow mat, a cream dish with a wide green rim). Such an object carries no
  single-colour claim and no same-colour uniqueness: the verdict on a single colour is never "supported".
- `same_colour(a, b)`: whether two objects' colours agree ("the straw that has the same color as the
  tablecloth").
- `verify_recolour(after, old, new)`: after an edit, whether the whole mask reads as the new colour and
  no part as the old.

Each GQA colour word maps onto the colour terms (`COLOUR_WORDS`): the terms that *show* it (support), the
terms that do not contradict it (`near`: its shades and neighbours, e.g. gray beside white, since a white
wall in shade reads gray, and brown beside red), and a tone ("light", "dark") for two-word colours, judged
on the median lightness of the supporting pixels. Every other term counts against the claim.

The rules (shares are of the object's named pixels):
- supported: support at least SUPPORT_SHARE and no single term against it larger, the tone (if any)
  satisfied, and the object not multi-coloured;
- contradicted: support below CONTRADICT_SUPPORT and the terms against it at least CONTRADICT_AGAINST;
  or the hue supported but the tone the opposite (a "light blue" object whose blue is dark);
- unknown otherwise, and always when the mask cannot be trusted (`core.pixels.masks.ObjectMask.problems`): a
  mask that kept the wrong part reads the wrong colour. A mask from the centre-seeded retry (`method`
  "seeded") may support but never contradict: it shows what the box centre looks like, which on a
  sloppy box is the background.

What it cannot see: colours the camera or the light changed (a white pillow in a dim room reads gray,
which "white" tolerates; a wall under lamplight reads beige, which "white" tolerates; a strong colour
cast is not corrected), polished metal (a silver spoon beside a red saucer reads brown: "silver", "gold"
and "bronze" may be supported, never contradicted), and anything the mask leaves out or takes in (see
`core/pixels/masks.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from hardneg.core.colors import TERMS, ColourReading, read_colours
from hardneg.core.pixels.masks import ObjectMask, object_mask

Verdict = Literal["supported", "contradicted", "unknown"]
Tone = Literal["light", "dark"]

SUPPORT_SHARE = 0.4
CONTRADICT_SUPPORT = 0.1
CONTRADICT_AGAINST = 0.6
LARGE_SHARE = 0.2  # a colour covering this share of an object is on it (a negative naming it is still true),
# and two such colours not near each other make it multi-coloured ...
DARK_LARGE_SHARE = 0.4  # ... except black and gray, where shadow, glass and tyres also fall: they need this
DARK_TERMS = frozenset({"black", "gray"})
LIGHT_L = 60.0  # the supporting pixels' median L for "light ..." ...
DARK_L = 45.0  # ... and for "dark ..."
TONE_MARGIN = 15.0  # a tone is contradicted past the other side's threshold by this much
SAME_OVERLAP = 0.5  # same colour: the shares' overlap (sum of minima) at least this, same dominant term
DIFFERENT_OVERLAP = 0.2  # different colours: the overlap at most this, dominant terms not near
RECOLOUR_NEW = 0.8  # a verified recolour: the new colour's support at least this ...
RECOLOUR_OLD = 0.05  # ... and the old colour's own terms at most this
MIN_PIXELS = 30  # fewer named pixels than this: no verdict


@dataclass(frozen=True, slots=True)
class ColourWord:
    """A GQA colour word in colour terms: those that show it, those that do not contradict it, its tone."""

    terms: frozenset[str]
    near: frozenset[str] = frozenset()
    tone: Tone | None = None
    metallic: bool = False  # a polished metal shows what it reflects: its colour can be supported, not contradicted

    def __post_init__(self) -> None:
        unknown = (self.terms | self.near) - set(TERMS)
        if unknown:
            raise ValueError(f"not colour terms: {sorted(unknown)}")


def _w(terms: str, near: str = "", tone: Tone | None = None, metallic: bool = False) -> ColourWord:
    return ColourWord(frozenset(terms.split()), frozenset(near.split()), tone, metallic)


# Terms that are shades or neighbours of each other: a pair of large shares from one of these is one colour
# in its light and shade (white and gray on a white car), not two colours.
NEAR_TERMS: frozenset[frozenset[str]] = frozenset(
    frozenset(p.split())
    for p in (
        "white gray", "gray black", "white beige", "beige brown", "beige yellow", "beige orange", "red pink",
        "red orange", "red brown", "orange brown", "orange yellow", "yellow brown", "blue purple",
        "purple pink", "beige gray",
    )
)  # fmt: skip

# GQA's colour words (VG's most frequent, and core.colors.COLORS's names) in colour terms.
COLOUR_WORDS: dict[str, tuple[ColourWord, ...]] = {
    "white": (_w("white", "gray beige"),),
    "off white": (_w("white beige", "gray yellow"),),
    "black": (_w("black", "gray"),),
    "gray": (_w("gray", "white black beige"),),
    "dark gray": (_w("gray black", "", "dark"),),
    "light gray": (_w("gray white", "beige", "light"),),
    "silver": (_w("gray white", "black beige blue", metallic=True),),
    "red": (_w("red", "pink orange brown"),),
    "bright red": (_w("red", "pink orange"),),
    "dark red": (_w("red", "brown purple black", "dark"),),
    "reddish": (_w("red orange brown", "pink"),),
    "maroon": (_w("red brown purple", "black", "dark"),),
    "orange": (_w("orange", "red yellow brown beige"),),
    "yellow": (_w("yellow", "orange green beige"),),
    "gold": (_w("yellow orange brown", "beige", metallic=True),),
    "green": (_w("green", "yellow"),),
    "dark green": (_w("green", "black yellow", "dark"),),
    "light green": (_w("green", "yellow white", "light"),),
    "blue": (_w("blue", "purple"),),
    "dark blue": (_w("blue", "purple black", "dark"),),
    "navy": (_w("blue", "purple black", "dark"),),
    "light blue": (_w("blue", "white gray", "light"),),
    "teal": (_w("blue green"),),
    "turquoise": (_w("blue green"),),
    "purple": (_w("purple", "blue pink"),),
    "pink": (_w("pink", "red purple beige"),),
    "brown": (_w("brown", "red orange beige"),),
    "dark brown": (_w("brown", "black red", "dark"),),
    "light brown": (_w("brown beige", "orange yellow", "light"),),
    "golden brown": (_w("brown orange yellow", "beige"),),
    "brunette": (_w("brown", "black red"),),
    "bronze": (_w("brown orange", "yellow", metallic=True),),
    "tan": (_w("beige brown", "orange yellow white", "light"),),
    "beige": (_w("beige", "white brown yellow gray"),),
    "cream": (_w("white beige", "yellow gray"),),
    "khaki": (_w("beige brown yellow", "green gray"),),
    "blond": (_w("yellow beige brown orange", "white"),),
    "black and white": (_w("black", "gray"), _w("white", "gray")),
    "red and white": (_w("red", "pink"), _w("white", "gray")),
}
_ALIASES = {
    "grey": "gray", "dark grey": "dark gray", "light grey": "light gray", "golden": "gold", "blonde": "blond",
    "cream colored": "cream", "navy blue": "navy", "white and black": "black and white", "red white": "red and white",
    "bright blue": "blue", "bright green": "green", "bright yellow": "yellow",
}  # fmt: skip
MULTICOLOUR_WORDS = frozenset({"multicolored", "multi-colored", "colorful", "colourful"})


def colour_word(word: str | None) -> tuple[ColourWord, ...] | None:
    """The colour terms of a GQA colour word ("Light Grey " -> light gray's), or None when the word names no
    colour the pixels can judge ("wooden", "dark", "colored")."""
    if word is None:
        return None
    key = " ".join(word.lower().split())
    return COLOUR_WORDS.get(_ALIASES.get(key, key))


def is_colour_claim(word: str | None) -> bool:
    """Whether `judge_colour` can judge `word` (a colour word, or "multicolored" and its spellings)."""
    return colour_word(word) is not None or (word or "").strip().lower() in MULTICOLOUR_WORDS


def near(a: str, b: str) -> bool:
    """Whether two colour terms are one colour in light and shade, or neighbours (NEAR_TERMS)."""
    return a == b or frozenset((a, b)) in NEAR_TERMS


def multicoloured(reading: ColourReading) -> tuple[str, ...]:
    """The large colours of an object that make it multi-coloured (two or more large shares, LARGE_SHARE or
    DARK_LARGE_SHARE for black and gray, some pair of them not near each other), largest first; empty when
    it is one colour."""
    large = tuple(t for t, s in reading.shares.items() if s >= (DARK_LARGE_SHARE if t in DARK_TERMS else LARGE_SHARE))
    if any(not near(a, b) for i, a in enumerate(large) for b in large[i + 1 :]):
        return large
    return ()


@dataclass(frozen=True, slots=True)
class ColourVerdict:
    """A verdict on a colour claim, with the numbers behind it and a sentence a person can read."""

    verdict: Verdict
    claim: str
    support: float  # share of the named pixels in the claim's colours (the smallest part's, for two colours)
    against: float  # share in colours that contradict it
    reason: str
    multicoloured: tuple[str, ...] = ()  # the large colours, when the object has several
    shares: Mapping[str, float] = field(default_factory=dict)

    @property
    def shows(self) -> bool:
        """Whether the claimed colour is on a large part of the object (LARGE_SHARE), whatever the verdict:
        a text negative naming a colour the object shows is still true of it."""
        return self.support >= LARGE_SHARE


def _unknown(claim: str, why: str, reading: ColourReading | None = None) -> ColourVerdict:
    shares = dict(reading.shares) if reading is not None else {}
    return ColourVerdict("unknown", claim, 0.0, 0.0, why, (), shares)


def _mask_doubt(mask: ObjectMask | None) -> str | None:
    if mask is None or mask.usable:
        return None
    return "mask: " + "; ".join(mask.problems)


def _tone_of(reading: ColourReading, terms: frozenset[str]) -> float | None:
    """The share-weighted median lightness of the supporting terms' pixels."""
    parts = [(reading.shares[t], reading.lightness[t]) for t in terms if t in reading.shares]
    if not parts:
        return None
    weight = sum(s for s, _ in parts)
    return sum(s * lightness for s, lightness in parts) / weight


def _judge_part(reading: ColourReading, part: ColourWord) -> tuple[Verdict, float, float, str]:
    support = reading.share(part.terms)
    against_terms = {t: s for t, s in reading.shares.items() if t not in part.terms and t not in part.near}
    against = float(sum(against_terms.values()))
    worst = max(against_terms.values(), default=0.0)
    if support < CONTRADICT_SUPPORT and against >= CONTRADICT_AGAINST:
        if part.metallic:
            return "unknown", support, against, "a metal shows what it reflects"
        return "contradicted", support, against, ""
    if part.tone is not None and support >= CONTRADICT_SUPPORT:
        lightness = _tone_of(reading, part.terms)
        assert lightness is not None
        if part.tone == "light" and lightness < LIGHT_L - TONE_MARGIN:
            return "contradicted", support, against, f"its {'/'.join(sorted(part.terms))} is dark (L {lightness:.0f})"
        if part.tone == "dark" and lightness > DARK_L + TONE_MARGIN:
            return "contradicted", support, against, f"its {'/'.join(sorted(part.terms))} is light (L {lightness:.0f})"
        if (part.tone == "light" and lightness < LIGHT_L) or (part.tone == "dark" and lightness > DARK_L):
            return "unknown", support, against, f"its lightness (L {lightness:.0f}) is neither light nor dark"
    if support >= SUPPORT_SHARE and support >= worst:
        return "supported", support, against, ""
    return "unknown", support, against, ""


def judge_colour(reading: ColourReading, word: str, mask: ObjectMask | None = None) -> ColourVerdict:
    """The verdict of the pixels on `word` (a GQA colour word, two-word and "X and Y" ones included, or
    "multicolored") for the object `reading` describes; `mask`, when given, is the mask it was read from,
    whose trust is checked (module docstring). Words that name no colour get "unknown"."""
    claim = " ".join(word.lower().split())
    if reading.pixels < MIN_PIXELS:
        return _unknown(claim, f"only {reading.pixels} pixels to read", reading)
    doubt = _mask_doubt(mask)
    if doubt:
        return _unknown(claim, doubt, reading)
    large = multicoloured(reading)
    seen = reading.describe()
    if claim in MULTICOLOUR_WORDS:
        top = next(iter(reading.shares.values()), 0.0)
        if large:
            return ColourVerdict("supported", claim, top, 0.0, f"several colours: {seen}", large, reading.shares)
        verdict: Verdict = "contradicted" if top >= 1.0 - LARGE_SHARE / 2 else "unknown"
        return ColourVerdict(verdict, claim, 1.0 - top, top, f"one colour: {seen}", large, reading.shares)
    parts = colour_word(claim)
    if parts is None:
        return _unknown(claim, f"{claim!r} is not a colour the pixels can judge", reading)
    judged = [_judge_part(reading, p) for p in parts]
    support = min(s for _, s, _, _ in judged)
    against = max(a for _, _, a, _ in judged)
    notes = "; ".join(n for _, _, _, n in judged if n)
    if any(v == "contradicted" for v, _, _, _ in judged):
        verdict = "contradicted"
    elif all(v == "supported" for v, _, _, _ in judged) and (len(parts) > 1 or not large):
        verdict = "supported"
    else:
        verdict = "unknown"
    if verdict == "contradicted" and mask is not None and mask.method != "grabcut":
        verdict, notes = "unknown", "the mask is the centre-seeded guess, which may support but not contradict"
    reason = f"{claim}: {support:.0%} of the object shows it, {against:.0%} contradicts it ({seen})"
    if large and len(parts) == 1:
        reason += f"; multi-coloured ({', '.join(large)})"
    if notes:
        reason += f"; {notes}"
    return ColourVerdict(verdict, claim, support, against, reason, large, reading.shares)


def same_colour(a: ColourReading, b: ColourReading) -> ColourVerdict:
    """Whether two objects have the same colour: supported when their dominant terms match and their shares
    overlap by SAME_OVERLAP; contradicted when the dominant terms are not near each other and the shares
    overlap by at most DIFFERENT_OVERLAP; unknown otherwise, and whenever one of them is multi-coloured
    (it carries no same-colour claim). `support` is the overlap (the sum over terms of the smaller share)."""
    claim = "same colour"
    if min(a.pixels, b.pixels) < MIN_PIXELS:
        return _unknown(claim, "too few pixels to read")
    overlap = float(sum(min(s, b.shares.get(t, 0.0)) for t, s in a.shares.items()))
    seen = f"({a.describe()} / {b.describe()})"
    many = multicoloured(a) or multicoloured(b)
    if many:
        reason = f"multi-coloured: {', '.join(many)} {seen}"
        return ColourVerdict("unknown", claim, overlap, 1.0 - overlap, reason, many, {})
    da, db = a.dominant, b.dominant
    assert da is not None and db is not None
    if da == db and overlap >= SAME_OVERLAP:
        verdict: Verdict = "supported"
    elif not near(da, db) and overlap <= DIFFERENT_OVERLAP:
        verdict = "contradicted"
    else:
        verdict = "unknown"
    reason = f"{da} and {db}, overlap {overlap:.0%} {seen}"
    return ColourVerdict(verdict, claim, overlap, 1.0 - overlap, reason, (), {})


def verify_recolour(after: ColourReading, old: str | None, new: str) -> ColourVerdict:
    """Whether an edit recoloured an object from `old` (None when unknown) to `new`, read on the edited
    image under the source's mask: supported when the new colour covers at least RECOLOUR_NEW of the mask
    and the old colour's own terms (those the new colour neither shows nor tolerates) at most RECOLOUR_OLD;
    contradicted when the new colour covers under SUPPORT_SHARE or the old one still covers a large part;
    unknown between."""
    claim = f"recoloured to {new}"
    parts = colour_word(new)
    if parts is None or len(parts) != 1:
        return _unknown(claim, f"{new!r} is not a single colour an edit can be checked for", after)
    if after.pixels < MIN_PIXELS:
        return _unknown(claim, f"only {after.pixels} pixels to read", after)
    target = parts[0]
    support = after.share(target.terms)
    old_parts = colour_word(old) if old else None
    own = set().union(*(p.terms for p in old_parts)) - target.terms - target.near if old_parts else set()
    left = after.share(own)
    seen = after.describe()
    if support >= RECOLOUR_NEW and left <= RECOLOUR_OLD:
        verdict: Verdict = "supported"
    elif support < SUPPORT_SHARE or left >= LARGE_SHARE:
        verdict = "contradicted"
    else:
        verdict = "unknown"
    reason = f"{support:.0%} of the mask reads {new}, {left:.0%} still reads {old} ({seen})"
    return ColourVerdict(verdict, claim, support, left, reason, multicoloured(after), after.shares)


def colour_evidence(
    rgb: np.ndarray, box: Sequence[float], words: Sequence[str], *, seed: int = 0
) -> tuple[ObjectMask, ColourReading, list[ColourVerdict]]:
    """The whole check for one object: its mask in `box` (xywh) of the RGB uint8 image, its colour reading
    and a verdict per word of `words` (its colour attributes, or a negative's new colour)."""
    mask = object_mask(rgb, box, seed=seed)
    x0, y0, x1, y1 = mask.box
    reading = read_colours(rgb[y0:y1, x0:x1], mask.mask)
    return mask, reading, [judge_colour(reading, w, mask) for w in words]
