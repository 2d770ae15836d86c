"""Referring paths: which objects may be targets, the bounded path search, rendering into English, and the balanced
selection of positives.
"""
