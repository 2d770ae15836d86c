"""The demo world: a seeded procedural dataset in GQA format (graphs and rendered pictures), so a run needs no
download.
"""
