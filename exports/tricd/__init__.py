"""The TRICD export: contextual phrase detection pairs, their confusable distractors and the official grounding
layout.
"""
