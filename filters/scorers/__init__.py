"""Scorers: each gives every item it targets a number (CLIP, DINOv2, DIRE, the offline stand-ins, the text scorers,
the edit checks); rules elsewhere decide.
"""
