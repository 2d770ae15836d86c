"""The pure decision rule on edge cases."""

from __future__ import annotations

import pytest

from filters.decide import Thresholds, decide_image, decide_text

T = Thresholds()


@pytest.mark.parametrize(
    ("scores", "keep"),
    [({"clip_margin": 0.1}, True), ({"clip_margin": 0.0}, False), ({"clip_margin": -0.2}, False), ({}, True)],
)
def test_text_margin(scores, keep):
    d = decide_text(scores, T)
    assert d.keep is keep
    assert (d.reason is None) is keep


def test_text_without_clip_is_dropped_when_clip_is_required():
    d = decide_text({}, Thresholds(require_clip=True))
    assert not d.keep and "no CLIP score" in d.reason


def test_image_picks_the_most_similar_passing_candidate():
    c = [
        {"similarity": 0.99, "realism": 0.5},  # most similar, but looks edited
        {"similarity": 0.80, "realism": 0.1},
        {"similarity": 0.90, "realism": 0.2},  # exactly at the threshold: passes
        {"similarity": 0.95, "realism": 0.1, "clip_margin": -0.01},  # CLIP prefers the negative image
    ]
    d = decide_image(c, T)
    assert d.keep and d.candidate == 2
    reasons = dict(d.losers)
    assert set(reasons) == {0, 1, 3}
    assert "realism" in reasons[0] and "CLIP margin" in reasons[3] and "best of 4" in reasons[1]


def test_image_ties_go_to_the_lower_index_and_missing_similarity_ranks_last():
    assert decide_image([{"similarity": 0.5}, {"similarity": 0.5}], T).candidate == 0
    assert decide_image([{}, {"similarity": 0.1}], T).candidate == 1


def test_image_with_no_passing_candidate_is_dropped_with_every_reason():
    d = decide_image([{"realism": 0.9}, {"realism": 0.3}], T)
    assert not d.keep and d.candidate is None and "no candidate passed (2 tried)" in d.reason
    assert [k for k, _ in d.losers] == [0, 1]


def test_stricter_thresholds_only_shrink():
    c = [
        {"similarity": s, "realism": r, "clip_margin": m}
        for s, r, m in [(0.9, 0.05, 0.2), (0.8, 0.15, 0.05), (0.7, 0.25, 0.3)]
    ]
    loose = decide_image(c, Thresholds(max_realism=0.3))
    strict = decide_image(c, Thresholds(max_realism=0.1, min_clip_margin=0.1))
    assert loose.keep and strict.keep and strict.candidate == 0
    assert not decide_image(c, Thresholds(max_realism=0.01)).keep
