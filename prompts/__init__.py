"""Package data: read through `hardneg.core.resources`, never by path arithmetic."""
