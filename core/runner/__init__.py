"""The runner: the Stage contract, a unit of work, the run folder, its lock, its all-or-nothing publishing,
progress hooks, what a worker builds once, and a stage run alone for tests.
"""
