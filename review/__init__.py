"""See and judge a run: the HTML report (`hardneg report`) and the human-filter app (`hardneg review`).

FineCops-Ref's last quality gate is a human filter: annotators see the target in a red box
and the related objects in green and blue, and mark each level-2/3 sample Correct, Ambiguous or Wrong
expression. Decisions live in `RUN/work/review.sqlite`; the human filter (`hardneg.filters.human`) keeps
them and turns them into drops for `hardneg split`, which the decide stage applies. This package reads run
folders defensively (older or newer versions); it sits above the filters and the exports it shows.
"""

from hardneg import require_full_name

require_full_name(__name__)
