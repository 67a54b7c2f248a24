"""A taskbfs cluster on SLURM through dask-jobqueue: CPU jobs and one job per GPU, one scheduler.

What it does
------------
Starts a Dask scheduler in this process (run it on a login node, or inside an allocation),
submits ``--cpu-jobs`` CPU jobs (one worker each, ``--cores`` threads advertising
``CPU=<cores>``) and ``--gpu-jobs`` GPU jobs (``--gres=gpu:1``, one thread advertising
``GPU=1``; SLURM sets ``CUDA_VISIBLE_DEVICES`` to the job's GPU), then runs one validated
search on a Kronecker graph generated on the workers.

dask-jobqueue's ``SLURMCluster`` submits one kind of job; the GPU jobs are further entries
of its ``worker_spec`` (it is a ``distributed.SpecCluster``) with their own options, so one
scheduler and one ``cluster.close()`` cover both kinds.

``--dry-run`` prints the two job scripts and submits nothing (no SLURM needed).

    pip install taskbfs dask-jobqueue
    python deploy/slurm_cluster.py --partition cpu --gpu-partition gpu --cpu-jobs 2 --gpu-jobs 4
    python deploy/slurm_cluster.py --dry-run

The scheduler must listen on an interface the compute nodes reach (``--interface ib0``,
default: what Dask picks); its dashboard stays on 127.0.0.1 (``ssh -L 8787:127.0.0.1:8787``).
"""

from __future__ import annotations

import argparse


def job_options(args: argparse.Namespace) -> tuple[dict, dict]:
    """The keyword arguments of the CPU job and of the GPU job (``SLURMJob``/``SLURMCluster``)."""
    common = {"processes": 1, "walltime": args.walltime, "account": args.account,
              "interface": args.interface}
    cpu = dict(common, queue=args.partition, cores=args.cores, memory=args.memory,
               worker_extra_args=["--resources", f"CPU={args.cores}"])
    gpu = dict(common, queue=args.gpu_partition or args.partition, cores=1,
               memory=args.gpu_memory, job_extra_directives=["--gres=gpu:1"],
               worker_extra_args=["--resources", "GPU=1"])
    return cpu, gpu


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--partition", help="SLURM partition of the CPU jobs (-p)")
    p.add_argument("--gpu-partition", help="partition of the GPU jobs (default: --partition)")
    p.add_argument("--account", help="SLURM account (-A)")
    p.add_argument("--walltime", default="01:00:00")
    p.add_argument("--cpu-jobs", type=int, default=1)
    p.add_argument("--cores", type=int, default=8, help="threads (and CPU=) per CPU job")
    p.add_argument("--memory", default="32GB", help="memory per CPU job")
    p.add_argument("--gpu-jobs", type=int, default=1, help="GPU jobs, one GPU each")
    p.add_argument("--gpu-memory", default="32GB", help="host memory per GPU job")
    p.add_argument("--interface", help="network interface of the scheduler and workers")
    p.add_argument("--scale", type=int, default=20, help="Kronecker scale of the test search")
    p.add_argument("--dry-run", action="store_true", help="print the job scripts, submit nothing")
    return p.parse_args(argv)


def job_scripts(args: argparse.Namespace) -> dict[str, str]:
    """The batch scripts the CPU and GPU jobs would run (for a scheduler at a placeholder)."""
    from dask_jobqueue.slurm import SLURMJob

    cpu, gpu = job_options(args)
    address = "tcp://SCHEDULER:8786"
    return {"cpu": SLURMJob(address, name="cpu", **cpu).job_script(),
            "gpu": SLURMJob(address, name="gpu", **gpu).job_script()}


def start_jobs(cluster, gpu_job_cls, gpu_options: dict, cpu_jobs: int, gpu_jobs: int) -> None:
    """Submit ``cpu_jobs`` jobs of ``cluster``'s own kind and ``gpu_jobs`` of ``gpu_job_cls``
    with ``gpu_options``, all workers of ``cluster``'s scheduler.

    Call it once; a later ``cluster.scale`` or ``adapt`` would treat the GPU jobs as its own.
    """
    for i in range(gpu_jobs):
        cluster.worker_spec[f"gpu-{i}"] = {"cls": gpu_job_cls, "options": gpu_options}
    cluster.scale(jobs=cpu_jobs + gpu_jobs)  # adds the CPU jobs and starts every entry


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.dry_run:
        for kind, script in job_scripts(args).items():
            print(f"# ---- {kind} job\n{script}")
        return

    from dask_jobqueue import SLURMCluster
    from dask_jobqueue.slurm import SLURMJob

    import taskbfs as tb

    cpu, gpu = job_options(args)
    with SLURMCluster(**cpu, scheduler_options={"dashboard_address": "127.0.0.1:8787"}) as cluster:
        start_jobs(cluster, SLURMJob, gpu, args.cpu_jobs, args.gpu_jobs)
        with tb.Runtime(cluster) as rt:
            rt.client.wait_for_workers(args.cpu_jobs + args.gpu_jobs)
            print("cluster:", rt.resources(), rt.dashboard_link)
            g = tb.kronecker(scale=args.scale, runtime=rt)  # generated on the workers
            r = tb.bfs(g, 0)
            tb.validate(g, 0, r.parents)
            print(f"scale {args.scale}: {r.teps / 1e6:.1f} MTEPS in {r.elapsed:.3f} s")


if __name__ == "__main__":
    main()
