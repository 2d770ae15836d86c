"""Negative images: edits of the scene graph carried out in pixels (inpainting, pastes, flips), one registry of
kinds.
"""
