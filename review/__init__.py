"""See and judge a run: the HTML report (`hardneg report`) and the human-filter app (`hardneg review`).

FineCops-Ref's last quality gate is a human filter: annotators see the target in a red box
and the related objects in green and blue, and mark each level-2/3 sample Correct, Ambiguous or Wrong
expression. Decisions live in `RUN/work/review.sqlite`; `apply.py` turns them into drops for `hardneg split`.
This package reads run folders defensively (older or newer versions), and imports only `hardneg.core`.
"""

from hardneg import require_full_name

require_full_name(__name__)
