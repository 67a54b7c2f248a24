"""Data on the workers: graphs placed or built there, and results kept there (no BFS here).

====================  ==========================================================
``GraphSlice``        one vertex range's adjacency, the unit placed on a worker
``PlacedGraph``       a graph's T slices on the workers, placed once and reused
``DistributedGraph``  a graph built on the workers (Kronecker, files, dask collections)
``KeptResult``        a search's distances and parents left on the workers, per range
====================  ==========================================================
"""
