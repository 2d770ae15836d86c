"""Filters: scorers write scores, and pure rules decide from them (score first, decide later)."""

from hardneg import require_full_name

require_full_name(__name__)
