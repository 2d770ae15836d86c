"""The errors a user must fix, apart from the bugs.

`HardnegError` is raised for what the person running hardneg can change: a bad config, a missing or wrong
input file or folder, a model folder that does not load, a server that stays unreachable, a run folder
another process is writing. Its message names the thing and, where it helps, what to do; the command line
prints it as one line and exits 2. Every other exception (a plain `ValueError` included) is a bug in
hardneg: the command line shows its traceback and exits 1.

Bad *data* inside the inputs is neither: a malformed scene graph or image is rejected with its reason
(`rejects.jsonl`) and the run goes on.
"""

from __future__ import annotations


class HardnegError(Exception):
    """Something the user must fix; the message says what, in one line."""


class ConfigError(HardnegError):
    """The config (a file, an override, a command-line flag, or a data file it names) cannot run."""


class InputError(HardnegError):
    """An input file or folder (scene graphs, images) is missing, unreadable, or broken as a whole (a
    truncated download)."""


class EmptyInput(InputError):
    """The inputs give nothing to build on: no image could be kept, or no positive could be made from them.
    A run that made its folder for nothing removes it (`core/runner/folder.py`)."""


class MissingDependency(HardnegError, ImportError):
    """An optional library the config asks for is not installed; the message says what to install. Still an
    ImportError, for code that checks whether a library is there."""
