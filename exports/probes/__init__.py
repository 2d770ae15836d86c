"""The probes export: Probe-R (relations), Probe-C (composition) and Probe-B (backgrounds), in the probing paper's
own layout.
"""
