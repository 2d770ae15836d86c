"""The word tables: English forms of GQA names and when one word truly contradicts another (nouns, attributes,
relations).
"""
