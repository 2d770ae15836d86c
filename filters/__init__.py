"""Filters: scorers write scores, and pure rules decide from them (score first, decide later)."""
