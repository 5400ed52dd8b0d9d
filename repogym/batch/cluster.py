"""The Ray executor of a batch (issue 23): each job a Ray task on a cluster, the engine
the field already runs its rollouts on, rather than one of repogym's own. A job is any
work item (:class:`repogym.batch.lines.Work`): a submission to grade, a task to validate.

- **Where.** ``address`` as ``ray.init`` takes it: ``auto`` (the cluster this machine is
  part of), ``HOST:PORT`` or ``ray://HOST:PORT``; None uses the Ray this process already
  started, or starts a local one. A local Ray, or a cluster whose head is on the loopback
  address, is joined on 127.0.0.1 (:func:`_driver_ip`). A job's paths (``repo``, ``patch``,
  ``tree``, ``task``, ``hidden``) must mean the same on every node: git URLs, or a file
  system every node mounts at the same place.
- **A task per job**, one CPU each. Ray keeps its worker processes between tasks, so a
  node's worker that graded a base before reuses what it made of it (the pristine tree,
  the base's runs of the tests: :mod:`repogym.tree.baselines`).
- **Perf jobs run alone on their node**: a perf job asks for as many CPUs as the largest
  node has, so it runs only on a node with nothing else running, and nothing starts
  there until it is done.
- **A lost worker or node** (``WorkerCrashedError``, ``NodeDiedError``, an object lost
  with its node) costs the job its run: it is given once more and its line says
  ``"retried": true``; lost twice, its line is an error report. Ray's own retries are
  off, so that a retry is always said.
- **Stopping**: closing the iterator (Ctrl-C) cancels the tasks not finished, their
  workers' commands killed as a cancelled grade's are.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.batch.lines import Work
from repogym.errors import UsageError
from repogym.sandbox.process import signals_interrupt

LOOPBACK = "127.0.0.1"


def _ray() -> Any:
    try:
        import ray  # an optional extra, loaded only for this executor
    except ImportError:
        raise UsageError(
            "--ray needs Ray: pip install 'repogym[ray]' (on the machine that starts the "
            "batch and on every node of the cluster)"
        ) from None
    return ray


def _on_node(job: Work) -> dict[str, Any]:
    """A job in a Ray worker: SIGTERM (a cancel) stops its grade as it stops one run
    from the command line."""
    with signals_interrupt():
        return job.run()


@dataclass(frozen=True, slots=True)
class Ray:
    """Run on a Ray cluster: see the module."""

    address: str | None = None

    def slots(self) -> int:
        """How many jobs run at once: the cluster's CPUs once it is joined (a job takes
        one), else 1."""
        ray = _ray()
        if not ray.is_initialized():
            return 1
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def run(self, jobs: Sequence[Work]) -> Generator[dict[str, Any], None, None]:
        ray = _ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {"address": self.address} if self.address else {}
            ip = _driver_ip(self.address)
            if ip is not None:
                options["_node_ip_address"] = ip
            ray.init(**options, include_dashboard=False, log_to_driver=False)
        largest = max(
            (int(n["Resources"].get("CPU", 1)) for n in ray.nodes() if n.get("Alive")),
            default=1,
        )
        remote = ray.remote(_on_node)
        task = remote.options(max_retries=0, num_cpus=1)
        perf = remote.options(max_retries=0, num_cpus=largest)
        tries: dict[str, int] = {}
        running: dict[Any, Work] = {}

        def submit(job: Work) -> None:
            tries[job.id] = tries.get(job.id, 0) + 1
            running[(perf if job.perf else task).remote(job)] = job

        for job in jobs:
            submit(job)
        try:
            while running:
                [ready], _ = ray.wait(list(running), num_returns=1)
                job = running.pop(ready)
                line = _result(ray, ready, job, tries)
                if line is None:
                    submit(job)
                    continue
                yield line
        finally:
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=False)


def _driver_ip(address: str | None) -> str | None:
    """The address this process joins Ray on: the loopback address for a local Ray and for
    a cluster whose head is on it (Ray would pick the machine's other address, and send
    traffic beyond the machine); None, Ray's choice, for a cluster elsewhere. ``auto`` is
    the cluster Ray recorded on this machine when its head started."""
    if address == "auto":
        recorded = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        try:
            address = recorded.read_text().split()[0]
        except (OSError, IndexError):
            return None
    if address is None:
        return LOOPBACK
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return LOOPBACK if host in ("localhost", "::1") or host.startswith("127.") else None


def _result(ray: Any, ref: Any, job: Work, tries: dict[str, int]) -> dict[str, Any] | None:
    """The line of a finished task; None when its worker was lost and it is to be
    tried again."""
    # A worker that died, by a signal or by the node's memory monitor, or its node.
    names = ("WorkerCrashedError", "NodeDiedError", "ObjectLostError", "LocalRayletDiedError")
    lost = tuple(
        getattr(ray.exceptions, name)
        for name in (*names, "OutOfMemoryError")
        if hasattr(ray.exceptions, name)
    )
    try:
        line: dict[str, Any] = ray.get(ref)
    except lost as error:
        if tries[job.id] < 2:
            return None
        message = f"the Ray worker running this job was lost twice: {error}"
        return {**job.error_line(message), "retried": True}
    except ray.exceptions.RayError as error:
        return job.error_line(f"the Ray task failed: {type(error).__name__}")
    if tries[job.id] > 1:
        line["retried"] = True
    return line
