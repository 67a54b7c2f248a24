"""taskbfs — task-based heterogeneous (CPU + GPU) breadth-first search on Dask.

After Munguía, Bader & Ayguadé, "Task-based Parallel Breadth-First Search in
Heterogeneous Environments" (HiPC 2012).
"""

from taskbfs.errors import (
    DeviceUnavailableError,
    EmptyGraphError,
    GraphFormatError,
    InvalidParameterError,
    InvalidVertexError,
    TaskBFSError,
    ValidationError,
)
from taskbfs.graph import Graph

__version__ = "0.1.0"
