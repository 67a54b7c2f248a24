"""CUDA kernels of a search whose levels stay on the GPU (numba.cuda); imported lazily.

Returns
    :func:`level_kernels` ``(block_size, items_per_thread, result_dtype)`` → a namespace of
    compiled kernels over a device copy of the adjacency of a vertex range ``[lo, hi)``
    (global vertex ids). They write the result (``parents``, ``distances``), the next
    frontier (a queue of vertex ids, or a bitmap) and one row of counts per level (int64):
    ``[FOUND, NEXT_EDGES, EXAMINED, DEFERRED]`` (vertices found, their out-arcs, adjacency
    entries read, bottom-up vertices left to stage 2): all the host reads back per level,
    with, for several tasks (``bounds``; those placed on the GPU: ``on_gpu``), each task's
    found vertices, their out-arcs and the entries its GPU steps read (``tally_found`` and
    the bottom-up kernels); the level's CPU tasks' pairs are claimed by ``accept_pairs``.
Approach
    A level is one or two launches plus the top-down scan: only counts go back to the host,
    the frontier never crosses the bus (:mod:`taskbfs.kernels.gpu_levels`). A small
    top-down level is one launch (``top_down_small``: a block per frontier vertex); a
    larger one the edge-balanced tiles of :mod:`taskbfs.kernels._gpu_kernels` (a scan of
    the frontier's degrees, a binary search per tile). A target is claimed by
    ``atomicCAS`` on its parent (-1 = unvisited), which writes the result and deduplicates
    at once; a tile's claimed vertices are queued by a block scan and one atomic.
    Bottom-up: stage 1, a thread per unvisited vertex reads at most ``limit``
    in-neighbours, the block writes its tile of the next bitmap whole (no clearing);
    stage 2, a block per deferred vertex finishes its list (the first frontier
    in-neighbour). Parents and ``EXAMINED`` are exactly the CPU step's
    (:mod:`taskbfs.kernels.cpu`). Level L writes counts row L % 3 and its first kernel
    zeroes the next level's: counts need no separate launch.
Encoding
    ``parents`` / ``distances`` / queues in ``result_dtype`` (int32 below 2^31 vertices,
    else int64); -1 unreached, -2 visited by a step that ran on the host (its pairs are
    written over the result there). ``indptr`` int64, the offsets of the adjacency's range
    ``[lo, hi)``, ``indices`` int32 or int64, bitmaps ``uint64`` (bit ``v & 63`` of word
    ``v >> 6``).
    Only ``syncthreads``, shared/local arrays and atomics: every kernel runs under
    ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import cuda, int32, int64, uint64

from taskbfs.kernels._gpu_kernels import bit_is_set, degree_in, kernels, task_of, upper_bound
from taskbfs.kernels._gpu_launch import launched_by_cupy

#: Columns of a counts row.
FOUND, NEXT_EDGES, EXAMINED, DEFERRED = range(4)
ROW = 4
#: Counts rows, used in turn: level L writes row L % 3 and zeroes row (L + 1) % 3.
ROWS = 3
#: ``parents`` of a vertex that a host step visited (its pair is written on the host).
VISITED_ON_HOST = -2

_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@cuda.jit(device=True, inline=True)
def _add_counts(counts, i_found, i_arcs, i_read, found, arcs, read):
    """Add a vertex's (or a tile's) found vertices, their out-arcs and the entries read."""
    if found:
        cuda.atomic.add(counts, i_found, found)
        cuda.atomic.add(counts, i_arcs, arcs)
    if read:
        cuda.atomic.add(counts, i_read, read)


@functools.cache
def level_kernels(block_size: int, items_per_thread: int, result_dtype: str) -> SimpleNamespace:
    """Compile (once per shape and vertex type) the level kernels for blocks of
    ``block_size`` threads (a power of two)."""
    base = kernels(block_size, items_per_thread)
    block_scan = base.block_exclusive_scan
    vid = int32 if np.dtype(result_dtype) == np.int32 else int64
    block = int(block_size)
    items = int(items_per_thread)
    tile = block * items
    scan_len = 2 * block
    word_tile = max(block, 64)  # bottom-up vertices per tile: whole bitmap words
    per_thread = word_tile // block
    tile_words = word_tile // 64
    tally_tile = block * items  # vertices a block tallies at once
    unvisited = vid(-1)
    on_host = vid(VISITED_ON_HOST)

    @cuda.jit
    def enter(visited, n, fresh, parents, distances, row):
        """A search's state from the host's visited bitmap: with ``fresh``, every vertex
        unreached (-1) but the visited ones (-2); else only those not visited here yet
        become -2. The next level's counts row zeroed."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        if i < ROW:
            row[i] = 0
        while i < n:
            seen = bit_is_set(visited, i)
            if fresh:
                parents[i] = on_host if seen else unvisited
                distances[i] = unvisited
            elif seen and parents[i] == unvisited:
                parents[i] = on_host
            i += stride

    @cuda.jit
    def fresh_result(n, parents, distances, row, bits, num_words):
        """A new search's result: every vertex unreached (-1); the next counts row and
        ``bits[:num_words]`` zeroed."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        if i < ROW:
            row[i] = 0
        while i < n:
            parents[i] = unvisited
            distances[i] = unvisited
            if i < num_words:
                bits[i] = _ZERO
            i += stride

    @cuda.jit
    def write_reached(entry, k, f, top_down, parents, distances, queue, bits):
        """The reached pairs into the result and the level's frontier into its queue
        (``top_down``) or its zeroed bitmap: ``entry`` holds the pairs' vertices, parents
        and distances (``k`` each, one after another) and then ``f`` frontier ids. A vertex
        named twice is at one distance: either parent is valid."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < k or i < f:
            if i < k:
                v = int64(entry[i])
                parents[v] = entry[k + i]
                distances[v] = entry[2 * k + i]
            if i < f:
                if top_down:
                    queue[i] = entry[3 * k + i]
                else:
                    u = int64(entry[3 * k + i])
                    cuda.atomic.or_(bits, u >> 6, _ONE << uint64(u & 63))
            i += stride

    @cuda.jit
    def top_down(indptr, indices, lo, hi, frontier, offsets, k, tile_first, num_tiles, depth,
                 parents, distances, queue, row, next_row):
        """One top-down level over the frontier's edges (``offsets``: the exclusive scan
        of its degrees; ``tile_first``: each tile's first source); the adjacency is that of
        ``[lo, hi)``, whose vertices alone have their out-arcs counted."""
        scan_scratch = cuda.shared.array(scan_len, int64)
        tile_base = cuda.shared.array(1, int64)
        arcs = cuda.shared.array(1, int64)
        found_v = cuda.local.array(items, int64)
        tid = cuda.threadIdx.x
        total = offsets[k]
        if cuda.blockIdx.x == 0 and tid < ROW:
            next_row[tid] = 0
            if tid == EXAMINED:
                row[EXAMINED] = total
        if tid == 0:
            arcs[0] = 0
        cuda.syncthreads()
        my_arcs = int64(0)
        t = cuda.blockIdx.x
        while t < num_tiles:
            start = t * tile
            first = tile_first[t]
            last = tile_first[t + 1] + 1
            count = 0
            for j in range(items):
                e = start + j * block + tid
                if e < total:
                    i = upper_bound(offsets, first, last, e) - 1
                    u = frontier[i]
                    v = indices[indptr[u - lo] + (e - offsets[i])]
                    if parents[v] == unvisited:
                        if cuda.atomic.cas(parents, v, unvisited, vid(u)) == unvisited:
                            distances[v] = vid(depth)
                            found_v[count] = v
                            count += 1
                            my_arcs += degree_in(indptr, lo, hi, v)
            prefix, tile_found = block_scan(scan_scratch, tid, count)
            if tid == 0 and tile_found > 0:
                tile_base[0] = cuda.atomic.add(row, FOUND, tile_found)
            cuda.syncthreads()
            at = tile_base[0] + prefix
            for j in range(count):
                queue[at + j] = vid(found_v[j])
            # thread 0 rewrites tile_base only after the next tile's scan barriers
            t += cuda.gridDim.x
        if my_arcs:
            cuda.atomic.add(arcs, 0, my_arcs)
        cuda.syncthreads()
        if tid == 0 and arcs[0]:
            cuda.atomic.add(row, NEXT_EDGES, arcs[0])

    @cuda.jit
    def top_down_small(indptr, indices, lo, hi, frontier, k, depth, parents, distances, queue,
                       row, next_row):
        """One top-down level of a small frontier in one launch (no scan, no tiles): a
        block per frontier vertex, its threads over the vertex's adjacency, each claimed
        target queued by an atomic; the counts as :func:`top_down` writes them."""
        arcs = cuda.shared.array(2, int64)  # next frontier's out-arcs, entries read
        tid = cuda.threadIdx.x
        if cuda.blockIdx.x == 0 and tid < ROW:
            next_row[tid] = 0
        if tid == 0:
            arcs[0] = 0
            arcs[1] = 0
        cuda.syncthreads()
        my_arcs = int64(0)
        my_read = int64(0)
        i = cuda.blockIdx.x
        while i < k:
            u = frontier[i]
            e = indptr[u - lo] + tid
            stop = indptr[u - lo + 1]
            while e < stop:
                v = indices[e]
                my_read += 1
                if parents[v] == unvisited:
                    if cuda.atomic.cas(parents, v, unvisited, vid(u)) == unvisited:
                        distances[v] = vid(depth)
                        queue[cuda.atomic.add(row, FOUND, 1)] = vid(v)
                        my_arcs += degree_in(indptr, lo, hi, v)
                e += block
            i += cuda.gridDim.x
        if my_arcs:
            cuda.atomic.add(arcs, 0, my_arcs)
        if my_read:
            cuda.atomic.add(arcs, 1, my_read)
        cuda.syncthreads()
        if tid == 0:
            if arcs[0]:
                cuda.atomic.add(row, NEXT_EDGES, arcs[0])
            if arcs[1]:
                cuda.atomic.add(row, EXAMINED, arcs[1])

    @cuda.jit
    def bottom_up(in_indptr, in_indices, out_indptr, lo, hi, num_words, frontier_bits, depth,
                  limit, parents, distances, next_bits, deferred, row, next_row, bounds,
                  num_tasks, on_gpu, task_rows):
        """Stage 1 of a bottom-up level: a thread per unvisited vertex of ``[lo, hi)`` (the
        adjacency's range) of a task placed on the GPU (``on_gpu``), at most ``limit``
        in-neighbours; the block writes its words of ``next_bits`` whole. With several tasks, each task's entries read go to
        ``task_rows[2 * num_tasks + t]`` (a tile inside one task adds its sum once)."""
        words = cuda.shared.array(tile_words, uint64)
        sums = cuda.shared.array(3, int64)  # found, their out-arcs, entries read
        tile_read = cuda.shared.array(1, int64)  # entries read in this tile (several tasks)
        tid = cuda.threadIdx.x
        if cuda.blockIdx.x == 0 and tid < ROW:
            next_row[tid] = 0
        if tid < 3:
            sums[tid] = 0
        found = int64(0)
        arcs = int64(0)
        examined = int64(0)
        several = num_tasks > 1
        first_tile = lo // word_tile
        t = first_tile + cuda.blockIdx.x
        while t * word_tile < hi:
            if tid < tile_words:
                words[tid] = 0
            if tid == 0:
                tile_read[0] = 0
            first_v = t * word_tile
            task = int64(0)
            whole = True
            if several:
                task = task_of(bounds, num_tasks, max(first_v, lo))
                whole = task == task_of(bounds, num_tasks, min(first_v + word_tile, hi) - 1)
            cuda.syncthreads()
            for r in range(per_thread):
                v = first_v + r * block + tid
                if lo <= v and v < hi and parents[v] == unvisited:
                    owner = task if whole else task_of(bounds, num_tasks, v)
                    if several and not on_gpu[owner]:
                        continue
                    start = in_indptr[v - lo]
                    stop = in_indptr[v - lo + 1]
                    end = min(stop, start + limit)
                    e = start
                    parent = int64(-1)
                    while e < end:
                        u = in_indices[e]
                        if bit_is_set(frontier_bits, u):
                            parent = u
                            break
                        e += 1
                    v_found = int64(0)
                    v_arcs = int64(0)
                    if parent >= 0:
                        parents[v] = vid(parent)
                        distances[v] = vid(depth)
                        cuda.atomic.or_(words, (v >> 6) - t * tile_words,
                                        _ONE << uint64(v & 63))
                        v_found = 1
                        v_arcs = out_indptr[v - lo + 1] - out_indptr[v - lo]
                        v_read = e - start + 1
                    else:
                        v_read = end - start
                        if stop > end:
                            deferred[cuda.atomic.add(row, DEFERRED, 1)] = vid(v)
                    found += v_found
                    arcs += v_arcs
                    examined += v_read
                    if several and v_read:
                        if whole:
                            cuda.atomic.add(tile_read, 0, v_read)
                        else:
                            cuda.atomic.add(task_rows, 2 * num_tasks + owner, v_read)
            cuda.syncthreads()
            w = t * tile_words + tid
            if tid < tile_words and w < num_words:
                next_bits[w] = words[tid]
            if several and whole and tid == 0 and tile_read[0]:
                cuda.atomic.add(task_rows, 2 * num_tasks + task, tile_read[0])
            cuda.syncthreads()  # before the next tile zeroes the words
            t += cuda.gridDim.x
        if found:
            cuda.atomic.add(sums, 0, found)
            cuda.atomic.add(sums, 1, arcs)
        if examined:
            cuda.atomic.add(sums, 2, examined)
        cuda.syncthreads()
        if tid == 0:
            if sums[0]:
                cuda.atomic.add(row, FOUND, sums[0])
                cuda.atomic.add(row, NEXT_EDGES, sums[1])
            if sums[2]:
                cuda.atomic.add(row, EXAMINED, sums[2])

    @cuda.jit
    def bottom_up_rest(in_indptr, in_indices, out_indptr, lo, frontier_bits, depth, limit,
                       deferred, parents, distances, next_bits, row, bounds, num_tasks,
                       task_rows):
        """Stage 2: a block per vertex stage 1 left, the rest of its in-neighbours (the
        entries read in its task's ``task_rows`` too, with several tasks)."""
        best_edge = cuda.shared.array(1, int64)
        tid = cuda.threadIdx.x
        num_deferred = row[DEFERRED]
        q = cuda.blockIdx.x
        while q < num_deferred:
            v = int64(deferred[q])
            start = in_indptr[v - lo] + limit
            stop = in_indptr[v - lo + 1]
            if tid == 0:
                best_edge[0] = stop
            cuda.syncthreads()
            chunk = start
            while chunk < stop:
                e = chunk + tid
                if e < stop and bit_is_set(frontier_bits, in_indices[e]):
                    cuda.atomic.min(best_edge, 0, e)
                cuda.syncthreads()
                done = best_edge[0] < stop
                cuda.syncthreads()
                if done:
                    break
                chunk += block
            if tid == 0:
                best = best_edge[0]
                v_found = int64(0)
                v_arcs = int64(0)
                v_read = stop - start
                if best < stop:
                    parents[v] = vid(in_indices[best])
                    distances[v] = vid(depth)
                    cuda.atomic.or_(next_bits, v >> 6, _ONE << uint64(v & 63))
                    v_found = 1
                    v_arcs = out_indptr[v - lo + 1] - out_indptr[v - lo]
                    v_read = best - start + 1
                _add_counts(row, FOUND, NEXT_EDGES, EXAMINED, v_found, v_arcs, v_read)
                if num_tasks > 1 and v_read:
                    owner = task_of(bounds, num_tasks, v)
                    cuda.atomic.add(task_rows, 2 * num_tasks + owner, v_read)
            cuda.syncthreads()
            q += cuda.gridDim.x

    @cuda.jit
    def split_queue(queue, k, bounds, num_tasks, on_gpu, gpu_queue, cpu_queue, tails):
        """The frontier ``queue[:k]`` split by its vertices' tasks: those placed on the
        GPU (``on_gpu``) appended to ``gpu_queue``, the others to ``cpu_queue`` (``tails``:
        the two counts, zeroed by the caller); a block scan places each block's share,
        one atomic per queue and block."""
        scratch = cuda.shared.array(scan_len, int64)
        at = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        start = cuda.blockIdx.x * block
        while start < k:
            i = start + tid
            v = queue[i] if i < k else queue[0]
            to_gpu = int64(0)
            if i < k and on_gpu[task_of(bounds, num_tasks, int64(v))]:
                to_gpu = 1
            to_cpu = int64(1) if i < k and to_gpu == 0 else int64(0)
            gpu_at, gpu_count = block_scan(scratch, tid, to_gpu)
            cuda.syncthreads()
            cpu_at, cpu_count = block_scan(scratch, tid, to_cpu)
            if tid == 0:
                at[0] = cuda.atomic.add(tails, 0, gpu_count) if gpu_count else 0
                at[1] = cuda.atomic.add(tails, 1, cpu_count) if cpu_count else 0
            cuda.syncthreads()
            if to_gpu:
                gpu_queue[at[0] + gpu_at] = v
            if to_cpu:
                cpu_queue[at[1] + cpu_at] = v
            cuda.syncthreads()  # before the next round's scan and placement
            start += block * cuda.gridDim.x

    @cuda.jit
    def accept_pairs(pairs, m, depth, top_down, out_indptr, lo, hi, parents, distances, queue,
                     bits, row, next_row):
        """The ``m`` pairs the level's CPU tasks found (``pairs``: their vertices, then
        their parents) into the result: a vertex still unreached is claimed as the GPU's
        steps claim theirs, then queued (``top_down``) or set in the next bitmap, and
        counted in ``row``. The next level's row zeroed (a level's GPU tasks may have no
        work)."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        if i < ROW:
            next_row[i] = 0
        while i < m:
            v = int64(pairs[i])
            if parents[v] == unvisited:
                if cuda.atomic.cas(parents, v, unvisited, pairs[m + i]) == unvisited:
                    distances[v] = vid(depth)
                    at = cuda.atomic.add(row, FOUND, 1)
                    if top_down:
                        queue[at] = vid(v)
                    else:
                        cuda.atomic.or_(bits, v >> 6, _ONE << uint64(v & 63))
                    cuda.atomic.add(row, NEXT_EDGES, degree_in(out_indptr, lo, hi, v))
            i += stride

    @cuda.jit
    def tally_found(distances, depth, out_indptr, lo, hi, bounds, num_tasks, row, task_rows,
                    next_task_rows):
        """Per task, the vertices of ``[lo, hi)`` a level found (those at distance ``depth``)
        and their out-arcs (``task_rows[t]``, ``task_rows[num_tasks + t]``), in tiles of
        contiguous vertices, a tile inside one task adding its sums once, so that the cost
        does not grow with the number of tasks; the level's counts ``row`` copied after the
        tasks' (one read-back), and the next level's ``next_task_rows`` zeroed."""
        sums = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        while i < 3 * num_tasks + ROW:
            next_task_rows[i] = 0
            if i < ROW:
                task_rows[3 * num_tasks + i] = row[i]
            i += cuda.gridsize(1)
        level = vid(depth)
        num_tiles = (hi - lo + tally_tile - 1) // tally_tile
        t = cuda.blockIdx.x
        while t < num_tiles:
            if tid < 2:
                sums[tid] = 0
            first = lo + t * tally_tile
            task = task_of(bounds, num_tasks, first)
            whole = task == task_of(bounds, num_tasks, min(first + tally_tile, hi) - 1)
            cuda.syncthreads()
            found = int64(0)
            arcs = int64(0)
            for r in range(items):
                v = first + r * block + tid
                if v < hi and distances[v] == level:
                    degree = degree_in(out_indptr, lo, hi, v)
                    if whole:
                        found += 1
                        arcs += degree
                    else:
                        owner = task_of(bounds, num_tasks, v)
                        cuda.atomic.add(task_rows, owner, 1)
                        cuda.atomic.add(task_rows, num_tasks + owner, degree)
            if found:
                cuda.atomic.add(sums, 0, found)
                cuda.atomic.add(sums, 1, arcs)
            cuda.syncthreads()
            if tid == 0 and sums[0]:
                cuda.atomic.add(task_rows, task, sums[0])
                cuda.atomic.add(task_rows, num_tasks + task, sums[1])
            cuda.syncthreads()  # before the next tile zeroes the sums
            t += cuda.gridDim.x

    @cuda.jit
    def queue_to_bits(queue, k, bits):
        """Set the bits of ``queue[:k]`` in ``bits`` (zeroed by the caller)."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < k:
            v = int64(queue[i])
            cuda.atomic.or_(bits, v >> 6, _ONE << uint64(v & 63))
            i += stride

    @cuda.jit
    def bits_to_queue(bits, num_words, queue, tail):
        """Append the vertices set in ``bits`` to ``queue`` (``tail[0]`` zeroed by the
        caller; the order is free)."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < num_words:
            word = bits[i]
            if word != _ZERO:
                count = 0
                for b in range(64):
                    if (word >> uint64(b)) & _ONE != _ZERO:
                        count += 1
                at = cuda.atomic.add(tail, 0, count)
                for b in range(64):
                    if (word >> uint64(b)) & _ONE != _ZERO:
                        queue[at] = vid(i * 64 + b)
                        at += 1
            i += stride

    @cuda.jit
    def visited_words(parents, n, num_words, words):
        """``words``: the bitmap of the vertices with a parent (or visited on the host)."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < num_words:
            word = _ZERO
            for b in range(64):
                v = i * 64 + b
                if v < n and parents[v] != unvisited:
                    word |= _ONE << uint64(b)
            words[i] = word
            i += stride

    @cuda.jit
    def publish(counts, n, host):
        """``host[:n] = counts[:n]``: counts into mapped host memory, where the host reads
        them once the kernels are done, with no copy queued behind other transfers."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            host[i] = counts[i]
            i += stride

    @cuda.jit
    def found_after(distances, parents, n, after, log_v, log_p, log_d, tail):
        """Append each vertex at a distance beyond ``after`` (found after the result's copy
        began) to the log: its id, parent and distance; ``tail[0]`` counts them."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            d = distances[i]
            if d > after:
                at = cuda.atomic.add(tail, 0, 1)
                log_v[at] = vid(i)
                log_p[at] = parents[i]
                log_d[at] = d
            i += stride

    launched = (enter, fresh_result, write_reached, top_down, top_down_small, bottom_up,
                bottom_up_rest, split_queue, accept_pairs, tally_found,
                queue_to_bits, bits_to_queue, visited_words, found_after, publish)
    return SimpleNamespace(base=base, tile=tile,
                           **{k.py_func.__name__: launched_by_cupy(k) for k in launched})
