"""The human filter: the labels annotators give (`labels`), where they are kept (`store`), how they decide a
sample (`apply`: each annotator's latest label is a vote; `agreement`) and the audit of a run's precision
(`audit`). The decide stage reads them; the review app (`hardneg.review`) is where people give them."""

from hardneg import require_full_name

require_full_name(__name__)
