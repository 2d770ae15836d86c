"""The photo as evidence: object masks (masks.py) and verdicts on colour claims (evidence.py); the colour
names they read are core/colors.py's."""
