"""Tunables of taskbfs, in one place, each with where its default comes from.

Change a default only with a measurement (say which script and machine in the comment).
"""

from __future__ import annotations

#: Default number of vertex-range tasks T: one per CPU slot of the cluster, at most this
#: many (taskbfs.bfs.core.default_tasks). The paper (Fig. 9) finds its best MTEPS with a
#: few tasks per core; here every task costs the runtime ~0.5 ms per level on 2 cores and
#: ~1.3 ms on the 16-core H100 host, so fewer win: on 2 cores T = 2 beat T = 8 by 28% at
#: scale 20 and 12% at scale 22 (benchmarks/peers.py, RESULTS.md); on the H100 host,
#: cpu-only at scale 24 was best at T = 8.
DEFAULT_TASKS = 8
#: Default T for the hybrid and gpu strategies on a cluster with GPU workers: this many
#: tasks per GPU worker. A GPU worker runs its tasks one at a time and each GPU task costs
#: the runtime ~2.5 ms per level on the H100 host (against ~0.8 ms for a CPU task:
#: benchmarks/level_overhead.py --strategy gpu), so one task per GPU won: hybrid at
#: T = 1 / 2 / 4 / 16 ran at 382 / 287 / 192 / 99 MTEPS at scale 20, 794 / 798 / 616 / 279
#: at scale 22 and 1656 / 1618 / 1255 / 867 at scale 24 (H100, 12 keys,
#: benchmarks/results/gpu_small_t_h100_run2.log); at T = 8, the CPU rule's choice there,
#: 449 at scale 22 (run1). The fixed strategy needs several tasks to split between the
#: devices and keeps the CPU rule.
DEFAULT_TASKS_PER_GPU = 1

#: How the vertex space is cut into tasks: "edges" balances the edge count per task
#: (Kronecker degrees are highly skewed, so equal vertex counts give unequal work).
DEFAULT_BALANCE = "edges"

#: Workload-aware hybrid threshold λ: a task whose frontier holds more than λ vertices
#: runs on the GPU. Measured by benchmarks/lambda_crossover.py on an NVIDIA H100 80GB HBM3
#: (16-core host, numba-cuda 0.30.4), 2026-11-21 05:36 UTC: one top-down step task over a
#: whole Kronecker scale-20 graph, slice resident in device memory; the GPU task is faster
#: above ~3400 frontier vertices (CPU 2.8 ms vs GPU 1.9 ms at 5793; 4.9 vs 2.2 ms at 11585;
#: benchmarks/results/lambda_crossover.csv). A GPU step costs ~2 ms whatever its size
#: (kernel launches from Python, counters read back, visited bitmap upload), which is what
#: sets the crossover. The first measurement (session 1, before the steps returned their
#: output in the barrier's form) gave 11751; on Kronecker scales 22 and 24 both values
#: place every step the same way (benchmarks/RESULTS.md). The paper's Fig. 4 found ~7000.
DEFAULT_LAMBDA = 3405

#: Device cache of a GPU worker (taskbfs/bfs/device_cache.py): bytes of GPU memory that the
#: task slices kept resident there, plus the shared scratch buffers, may take; least
#: recently used slices are evicted beyond it. None: DEVICE_MEMORY_FRACTION of the
#: device's free memory when the worker first runs a GPU task.
DEVICE_MEMORY_BUDGET = None
#: 80% of free memory leaves room for numba's context, kernel modules and allocator slack
#: (a guess, not a measurement: the scratch buffers are counted in the budget already).
DEVICE_MEMORY_FRACTION = 0.8
#: Page-locked host memory a process's GPU workers keep for copying step outputs back
#: (taskbfs/bfs/pinned.py): copies into reused pinned buffers ran ~50 GB/s on the H100
#: host, into new pageable arrays ~3 GB/s. A scale-24 search holds ~80 MB of outputs at
#: its end, in power-of-two buffers; beyond the budget copies go to ordinary memory.
#: 0 turns the pool off.
PINNED_POOL_BYTES = 1 << 30

#: Fixed-partitioned-space hybrid: share of the tasks (the first ones) bound to the GPU for
#: the whole traversal (paper Sec. V.B).
DEFAULT_GPU_SHARE = 0.5

#: Direction-optimizing switch (Beamer et al., used by the TOTEM paper): go bottom-up when
#: the frontier grows and its edges exceed unexplored edges / ALPHA; back to top-down when
#: it shrinks and its vertices fall below num_vertices / BETA. Values from Beamer's paper.
DO_ALPHA = 15.0
DO_BETA = 18.0

#: Graph500: number of search keys per run.
GRAPH500_KEYS = 64

#: Kronecker initiator probabilities (Graph500 specification).
KRONECKER_A = 0.57
KRONECKER_B = 0.19
KRONECKER_C = 0.19

#: Edges generated per chunk by the Kronecker generator; a chunk is the unit that a
#: worker can generate independently. 2**20 edges keeps a chunk at ~16 MB of int64 pairs.
KRONECKER_CHUNK_EDGES = 1 << 20

#: Seconds to wait when connecting to a scheduler address.
CONNECT_TIMEOUT = 10

#: Client→scheduler message batching interval in seconds (distributed's default is 10 ms).
#: Measured on the 2-core dev machine: a submit+result round trip drops from 10.5 ms to
#: 5.7 ms with 0; each BFS level pays one such round trip.
CLIENT_BATCH_INTERVAL = 0.0

#: Scheduler→worker and worker→scheduler message batching intervals in seconds
#: (distributed's defaults: 5 ms and 2 ms). Every BFS level waits on a chain of three
#: dependent tasks, so these delays add up per level: a level of T = 8 no-op tasks took
#: 25 ms with the defaults and 8.7 ms with 0 (embedded cluster, 2-core dev machine).
SCHEDULER_STREAM_INTERVAL = 0.0
WORKER_STREAM_INTERVAL = 0.0

#: At the end of a search, parents and distances are written by one task per equal slice
#: of the vertex ids: one slice per CPU slot of the cluster (CPU resource), at most
#: MAX_ASSEMBLY_TASKS, and none smaller than ASSEMBLY_MIN_VERTICES. Each depends on every
#: top-down step's output (it reads only the buckets that can hold its slice, but across
#: worker processes the whole output would travel), so more slices cost more
#: dependencies; and a task costs the runtime ~1 ms on the H100 host (level_overhead.py),
#: about what writing 2**20 vertices' parents and distances takes: smaller slices lose.
#: (16 slices of 2**18 vertices at scale 22 took 14% of a search on the H100.)
MAX_ASSEMBLY_TASKS = 16
ASSEMBLY_MIN_VERTICES = 1 << 20
#: ``bfs(..., dispatch=)`` when not given: "auto", the runtime includes a search's steps and
#: barriers in one task on the worker that holds the graph when there is one (measured:
#: 0.47x the wall time at scale 20 and 0.65x at 22 on 2 cores, against "tasks", every
#: step and barrier dispatched; benchmarks/RESULTS.md, session 10).
DEFAULT_DISPATCH = "auto"

#: A search run as one task on the GPU worker (``taskbfs.bfs.included``) keeps its
#: distances and parents on the device when every pair a GPU step reports is one the
#: barrier keeps: the GPU steps write their pairs there (and copy back only their
#: vertices, for the barrier), and the task copies the result back once at the end, into
#: pinned memory, instead of writing it on the host from every step's pairs (~34 ms of a
#: ~100 ms search at scale 24 on the H100; ``included._keeps_result_on_device`` says
#: when it applies).
RESULT_ON_DEVICE = True

#: In a search run as one task on a CPU worker, a top-down level with at most this many
#: frontier edges runs in a compiled loop with the small levels after it
#: (``taskbfs.bfs.compiled_levels``): the same steps and barrier with no host work per
#: level (~0.1 ms a level on 2 cores otherwise, a deep graph's whole search time). Its
#: steps run one after another on one thread, so the bound is about what 2 threads read
#: in that 0.1 ms.
COMPILED_LEVEL_EDGES = 1 << 12

#: Functions ("module:function") every worker runs when a Runtime starts, given the worker:
#: the search code, loaded before the first search instead of inside it (numba loads each
#: cached kernel at its first call: the first search of a process took 0.45-0.95 s on 2
#: cores against 8-30 ms steady at scale 16; with it, 1.8-2.2x; benchmarks/first_search.py).
WORKER_WARM_UP = ("taskbfs.bfs.warmup:warm_up",)

#: A search run as one task (``taskbfs.bfs.included``) sends the latest level's summary to
#: the client at most this often, for the live page and ``progress`` (it returns every
#: summary with its result): one message per level was half the time of a level of a
#: path graph on 2 cores (py-spy, session 10).
SUMMARY_INTERVAL = 0.05

#: The embedded default runtime calls ``gc.freeze()`` once it has started, so that Python's
#: full garbage collections skip the ~300 K long-lived objects of numba, pandas and
#: distributed: a full pass took 170 ms on 2 cores (7-25 ms frozen) and came every few
#: searches, since the in-process cluster allocates many objects per task
#: (``runtime.cluster._freeze_long_lived_objects``; benchmarks/RESULTS.md).
FREEZE_GC_AT_START = True
#: Whether the embedded default runtime's GPU workers run distributed's statistical
#: profiler (the dashboard's Profile page; the CPU worker always does). It samples the stack of the task a worker runs every 10 ms,
#: on the event loop's thread and holding the GIL; the GPU worker's task gives the GIL up
#: at every CUDA driver call (~100 a step), so each sample stalls it. Off: gpu-td at scale
#: 24, T = 1 ran 43 ms a search instead of 51 (H100, 5 keys; benchmarks/RESULTS.md).
PROFILE_GPU_WORKERS = False

#: A top-down barrier with at least this many candidates keeps their first occurrences
#: owner by owner on several threads (each owner's part is independent).
PARALLEL_ACCEPT_MIN = 1 << 18
#: A top-down GPU step with at least this many candidates buckets them by owner on the
#: device before copying them back (fewer are bucketed on the host).
DEVICE_BUCKET_MIN = 1 << 14
#: A top-down GPU step whose task owns every vertex (T = 1, the default for the hybrid and
#: gpu strategies on one GPU) returns its discoveries, already unique and unvisited (the
#: vertex mask), as visited-bitmap words with their degree sum made on the device, so
#: the barrier ORs words instead of testing and counting each candidate on the host.
TOP_DOWN_BITS_ON_DEVICE = True
#: A GPU step whose task owns every vertex (T = 1) leaves the next level's inputs on the
#: device: the visited bitmap with its discoveries ORed in, and the next frontier as
#: vertices and as bits (``DeviceCache.keep_for_next_level``). The next level's step of
#: the same search on that GPU then uploads none of them (at scale 24 a top-down frontier
#: reaches 7.4 M vertices, 59 MB). Host copies are still made for the barrier and CPU
#: steps.
CHAIN_LEVELS_ON_DEVICE = True
#: A GPU step whose output can hold vertices of two or more of this many equal vertex
#: ranges (a top-down step at T = 1, a bottom-up step whose range spans two or more)
#: buckets its output by them on the device, so that each result-assembly slice reads
#: only the buckets that overlap it instead of scanning the whole output (with T = 1
#: every one of up to MAX_ASSEMBLY_TASKS slices scanned every step output). 1: off.
RESULT_RANGES = 16
