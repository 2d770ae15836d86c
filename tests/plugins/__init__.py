"""The worked examples of docs/extending.md, one file each as it would sit in its package; registered only
inside the tests that load them (tests/test_plugins.py), so the demo's kinds, filters and exports stay
the shipped ones."""
