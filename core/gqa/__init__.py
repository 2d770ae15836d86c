"""GQA scene graphs in: the streaming loader, the ingest, hygiene and plausibility stages, and what the corpus says
about its own annotations.
"""
