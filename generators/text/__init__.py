"""Text: LLM rewrites of positives, the English checks, and the negative expressions (replace and swap)."""
