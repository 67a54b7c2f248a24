"""Exception classes of taskbfs.

Every error that taskbfs raises on purpose derives from :class:`TaskBFSError`, so a
caller (and the CLI) can tell "your input was wrong" from a bug. Each message names
what was wrong: the file and line, the parameter, or the vertex.
"""

from __future__ import annotations


class TaskBFSError(Exception):
    """Base class of all errors raised by taskbfs on purpose."""


class GraphFormatError(TaskBFSError, ValueError):
    """A graph file is malformed: the message names the file and the line.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str, optional
        The file being read.
    line : int, optional
        1-based line number where the problem was found.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)

    def __reduce__(self):  # the error crosses processes when a worker reads the file
        return type(self), (self.reason, self.path, self.line)


class InvalidParameterError(TaskBFSError, ValueError):
    """A parameter is out of range or of the wrong kind (T < 1, λ < 0, unknown strategy...)."""


class InvalidGraphError(InvalidParameterError):
    """A graph's arrays are not a CSR graph (an ``indices`` entry outside ``0..n-1``, an
    ``indptr`` that decreases...): the message names the position and the vertex."""


class InvalidVertexError(InvalidParameterError):
    """A vertex id is negative or not in the graph."""


class EmptyGraphError(TaskBFSError, ValueError):
    """The graph has no vertices."""


class DeviceUnavailableError(TaskBFSError, RuntimeError):
    """A task or strategy needs a device (e.g. a GPU) that no worker of the cluster offers."""


class TaskExecutionError(TaskBFSError, RuntimeError):
    """A task failed on a worker; the message names the task and the original error."""


class WorkerLostError(TaskBFSError, RuntimeError):
    """A worker left the cluster (killed, crashed, or removed) while a search needed it.

    Attributes
    ----------
    workers : list of str
        The addresses of the workers that left (empty when it could not be told which).
    level : int or None
        The level the search was at (the last one the client heard of; None before).
    """

    def __init__(self, message: str, workers=(), level: int | None = None):
        self.workers = list(workers)
        self.level = level
        super().__init__(message)


class SearchTimeoutError(TaskBFSError, TimeoutError):
    """A search did not finish within its ``timeout``; ``level`` is the level it was at
    (the last one the client heard of; None before the first)."""

    def __init__(self, message: str, level: int | None = None):
        self.level = level
        super().__init__(message)


class InsufficientMemoryError(TaskBFSError, MemoryError):
    """A graph build or a search needs more memory than is free where it would run;
    checked before it starts.

    Attributes
    ----------
    needed, available : int
        Bytes it needs, and bytes free (for a search: on the workers, or the client).
    """

    def __init__(self, message: str, needed: int, available: int):
        self.needed = needed
        self.available = available
        super().__init__(message)


class ValidationError(TaskBFSError, AssertionError):
    """A BFS result broke one of the Graph500 validation rules.

    Attributes
    ----------
    rule : int
        The rule number (1-5) as the Graph500 specification numbers them.
    witness : object
        A vertex or an edge (u, v) that shows the violation.
    """

    def __init__(self, rule: int, message: str, witness=None):
        self.rule = rule
        self.witness = witness
        super().__init__(f"Graph500 rule {rule} broken: {message}")
