"""A real single-node SLURM cluster for tests: munged, slurmctld and slurmd as child processes.

Everything lives in one private directory (key, socket, configuration, state, spool, logs, the
job completion log), the daemons listen on free ports and are stopped by PID, so a test cluster
never touches the machine's own munge or SLURM and leaves nothing behind. Clients (sbatch,
squeue, scancel, sinfo, and dask-jobqueue, which calls them) find the cluster through
``SLURM_CONF`` in :attr:`SlurmCluster.env`; the munge socket is named in slurm.conf.

The node has the machine's real CPU count. A Dask worker job asks for all of them
(``--cpus-per-task`` = the largest fill), so the partition lets two jobs share a core
(``OverSubscribe=FORCE:2``): two one-worker "nodes" then run side by side on one machine.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.grid_site import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "squeue", "sbatch", "scancel", "scontrol")
SOCKET_PATH_MAX = 100  # AF_UNIX paths are limited to 108 bytes; slurmstepd adds its own names


class SlurmError(RuntimeError):
    """The test cluster did not come up (the message carries the daemons' log tails)."""


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    partition: str
    cpus: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """What a client process needs on top of its own environment."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def workdir(self) -> Path:
        """Where to submit from: jobs run here and write their slurm-<id>.out here."""
        return self.root / "jobs"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def jobcomp(self) -> Path:
        return self.root / "jobcomp.log"

    def client_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**(os.environ if base is None else base), **self.env}

    def run(self, *argv: str, timeout: float = 10.0) -> str:
        """Run a SLURM client command against this cluster; its stdout."""
        proc = subprocess.run(
            list(argv),
            env=self.client_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise SlurmError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T").strip()

    def job_ids(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    def completed_jobs(self) -> list[dict[str, str]]:
        """Finished jobs from the job completion log (jobcomp/filetxt): one dict per job."""
        if not self.jobcomp.exists():
            return []
        jobs = []
        for line in self.jobcomp.read_text().splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if fields:
                jobs.append(fields)
        return jobs

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for path in sorted(self.logs.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)


def missing_programs() -> list[str]:
    return [p for p in (*DAEMONS, *CLIENTS) if shutil.which(p) is None]


def default_memory_mb() -> int:
    """What the node offers: 80 % of this machine's memory, at most 16 GiB (not consumed by jobs,
    only checked against each job's ``--mem``)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return int(min(16384, total * 0.8))


def _distinct_free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def slurm_conf(
    root: Path,
    *,
    cluster_name: str,
    node: str,
    partition: str,
    cpus: int,
    memory_mb: int,
    ctld_port: int,
    slurmd_port: int,
    munge_socket: Path,
) -> str:
    user = getpass.getuser()
    controller = socket.gethostname().split(".")[0]  # slurmctld must find its own host name
    return f"""\
ClusterName={cluster_name}
SlurmctldHost={controller}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.log
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={node} NodeAddr=127.0.0.1 NodeHostname={node} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={partition} Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:2
"""


def start(
    root: Path,
    *,
    cpus: int | None = None,
    memory_mb: int | None = None,
    partition: str = "instore",
    timeout_s: float = 30.0,
) -> SlurmCluster:
    """Start munged, slurmctld and slurmd under ``root``; return once the node is idle.

    On any failure everything already started is stopped before the error is raised.
    """
    if len(str(root / "spool" / ("x" * 24))) > SOCKET_PATH_MAX:
        raise SlurmError(f"{root} is too long a path for the daemons' UNIX sockets")
    for sub in ("munge", "state", "spool", "log", "run", "jobs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o755)  # clients must reach the socket; the key itself is 0600
    tag = secrets.token_hex(3)
    cluster = SlurmCluster(
        root=root,
        conf=root / "slurm.conf",
        node=f"instore-{tag}",
        partition=partition,
        cpus=cpus or os.cpu_count() or 1,
    )
    key, munge_socket = root / "munge" / "munge.key", root / "munge" / "socket"
    key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o600)
    ctld_port, slurmd_port = _distinct_free_ports(2)
    cluster.conf.write_text(
        slurm_conf(
            root,
            cluster_name=f"instore{tag}",
            node=cluster.node,
            partition=partition,
            cpus=cluster.cpus,
            memory_mb=memory_mb or default_memory_mb(),
            ctld_port=ctld_port,
            slurmd_port=slurmd_port,
            munge_socket=munge_socket,
        )
    )
    try:
        cluster.procs["munged"] = _spawn(
            cluster,
            "munged",
            [
                "munged",
                "-F",
                "--force",
                f"--key-file={key}",
                f"--socket={munge_socket}",
                f"--pid-file={root}/run/munged.pid",
                f"--log-file={root}/log/munged.log",
                f"--seed-file={root}/munge/munged.seed",
            ],
        )
        _wait(cluster, lambda: munge_socket.exists(), timeout_s, "munged to open its socket")
        cluster.procs["slurmctld"] = _spawn(cluster, "slurmctld", ["slurmctld", "-D", "-i"])
        cluster.procs["slurmd"] = _spawn(cluster, "slurmd", ["slurmd", "-D", "-N", cluster.node])
        _wait(cluster, lambda: _idle(cluster), timeout_s, f"node {cluster.node} to be idle")
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _spawn(cluster: SlurmCluster, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
    out = (cluster.logs / f"{name}.stdout").open("wb")
    with out:
        return subprocess.Popen(
            argv,
            env=cluster.client_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cluster.root,
            start_new_session=True,  # a Ctrl-C in the terminal reaches pytest, not the daemons
        )


def _idle(cluster: SlurmCluster) -> bool:
    try:
        return cluster.node_state() == "idle"
    except (SlurmError, subprocess.TimeoutExpired):
        return False


def _wait(cluster: SlurmCluster, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, proc in cluster.procs.items():
            if proc.poll() is not None:
                raise SlurmError(
                    f"{name} exited {proc.returncode} while waiting for {what}\n"
                    + cluster.log_tail()
                )
        if ready():
            return
        time.sleep(0.2)
    raise SlurmError(f"timed out after {timeout_s:.0f} s waiting for {what}\n{cluster.log_tail()}")


def stop(cluster: SlurmCluster, timeout_s: float = 20.0) -> list[int]:
    """Cancel every job, stop the daemons by PID, then end any process still using ``root``.

    Returns the PIDs of stray processes that had to be ended (job steps, workers).
    """
    if cluster.procs.get("slurmctld") and cluster.procs["slurmctld"].poll() is None:
        with contextlib.suppress(SlurmError, subprocess.TimeoutExpired):
            jobs = cluster.job_ids()
            if jobs:
                cluster.run("scancel", *jobs)
            deadline = time.monotonic() + timeout_s
            while cluster.job_ids() and time.monotonic() < deadline:
                time.sleep(0.2)
    for name in reversed(DAEMONS):
        proc = cluster.procs.get(name)
        if proc is not None:
            _end(proc.pid, lambda p=proc: p.poll() is not None, timeout_s)
            proc.wait()
    strays = _processes_using(cluster.root)
    for pid in strays:
        _end(pid, lambda pid=pid: not _alive(pid), timeout_s)
    return strays


def _end(pid: int, gone: Callable[[], bool], timeout_s: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if gone():
                return
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _processes_using(root: Path) -> list[int]:
    """PIDs (other than ours) whose working directory or an open file is under ``root``."""
    root = root.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        links = [entry / "cwd"]
        with contextlib.suppress(OSError):
            links += list((entry / "fd").iterdir())
        for link in links:
            try:
                target = Path(os.readlink(link))
            except OSError:
                continue
            if target.is_relative_to(root):
                found.append(int(entry.name))
                break
    return found


@contextlib.contextmanager
def running(
    root: Path,
    *,
    cpus: int | None = None,
    memory_mb: int | None = None,
    partition: str = "instore",
    timeout_s: float = 30.0,
) -> Iterator[SlurmCluster]:
    """A started cluster (see :func:`start`), stopped on exit whatever happened."""
    cluster = start(root, cpus=cpus, memory_mb=memory_mb, partition=partition, timeout_s=timeout_s)
    try:
        yield cluster
    finally:
        stop(cluster)
