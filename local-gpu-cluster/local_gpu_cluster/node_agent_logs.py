"""What a smoke test's container prints on the local cluster, from its node and what it was given (the node agents
write these as the pod's log; KWOK serves them).

* ``nvidia_smi``: one row per GPU the pod holds, the node's product and driver; without a driver, NVML's error.
* ``nccl``: the launcher's log of a two-node ``all_reduce_perf``: ``[GDRDMA]`` channels over ``NET/IB`` only when
  GPUDirect RDMA can work (``gdr_blocked`` empty), with NCCL's line per path each node offers (nvidia-peermem,
  DMA-BUF), at the bus bandwidth the nodes' NICs give; else NCCL's fall-back to ``NET/Socket`` at TCP's speed, with
  the reasons printed first.
* ``gang_member``: the member's line with its pod's real start time.

The formats are nccl-tests', NCCL's and nvidia-smi's (``local_gpu_cluster/nccl_logs.py`` and
``plugins/module_utils/domain/smoke/checks.py`` hold the facts); the numbers are derived, not canned.
"""

from . import nccl_logs

# Usable bus bandwidth one NIC gives all_reduce, GB/s: about 90% of the link (HDR 200 Gb/s, NDR 400 Gb/s).
NIC_BUSBW = {"ConnectX-6": 22.5, "ConnectX-7": 45.0}
TCP_BUSBW = 2.4  # what NCCL's socket transport reaches over the pod network
SIZES = (536870912, 1073741824, 2147483648, 4294967296, 8589934592)
SMI_HEAD = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {driver:<20}  Driver Version: {driver:<14} CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
"""
SMI_ROW = """\
| {index:>3}  {name:<26} On  |   00000000:{bus:02X}:00.0 Off |                    0 |
| N/A   31C    P0             70W /  700W |       1MiB / {memory:>6}MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""
SMI_NAMES = {"NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3": "NVIDIA H100 80GB HBM3",
             "NVIDIA-H100-NVL": "NVIDIA H100 NVL"}
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
             "NVIDIA driver is installed and running.\n")


def nvidia_smi(hardware, gpus, driver_version):
    """``gpus`` rows of the node's GPU (its product as nvidia-smi names it), or NVML's error without a driver."""
    if not driver_version or not hardware.get("gpus"):
        return NO_DRIVER
    product = SMI_NAMES.get(hardware["gpus"]["product"], hardware["gpus"]["product"])
    text = SMI_HEAD.format(driver=driver_version)
    for index in range(gpus):
        text += SMI_ROW.format(index=index, name=product[:26], bus=0x18 + 0x10 * index,
                               memory=hardware["gpus"]["memory_mib"])
    return text


def busbw(hardwares):
    """The bus bandwidth two nodes reach over their InfiniBand NICs (the slower node decides)."""
    rates = []
    for declared in hardwares:
        nics = declared.get("nics") or {}
        rates.append(NIC_BUSBW.get(nics.get("model"), 0.0) * nics.get("count", 0))
    return min(rates) if rates else 0.0


def _table(bandwidth):
    rows = []
    for step, size in enumerate(SIZES):
        bus = bandwidth * (0.97 + 0.0075 * step)
        alg = bus * 16 / (2 * 15)  # all_reduce over 16 ranks: busbw = algbw * 2(n-1)/n
        micros = size / (alg * 1e3)
        rows.append("%12d  %12d     float     sum      -1  %7.1f  %6.2f  %6.2f      0  %7.1f  %6.2f  %6.2f      0"
                    % (size, size // 4, micros, alg, bus, micros, alg, bus))
    average = sum(bandwidth * (0.97 + 0.0075 * step) for step in range(len(SIZES))) / len(SIZES)
    return "\n".join(rows) + "\n", average


def gdr_path_lines(workers, paths):
    """NCCL's line per GPUDirect RDMA path each worker's HCA offers (``paths``: one set per worker, of ``peermem``
    and ``dmabuf``)."""
    text = ""
    for host, pid, offered in zip(workers, (41, 37), paths or ()):
        text += "".join(nccl_logs.NCCL_GDR_PATHS[p].format(host=host, pid=pid)
                        for p in nccl_logs.GDR_PATH_ORDER if p in offered)
    return text


def nccl(workers, gdr_blocked, bandwidth, paths=()):
    """The launcher's log; ``workers``: the two worker pods' host names; ``gdr_blocked``: why GPUDirect RDMA cannot
    work (empty when it can); ``paths``: per worker, the GPUDirect RDMA paths NCCL finds there (``peermem``,
    ``dmabuf``), printed after the IB devices."""
    first, second = (list(workers) + ["worker-0", "worker-1"])[:2]

    def named(text):
        return text.replace(nccl_logs.W0, first).replace(nccl_logs.W1, second)
    if gdr_blocked:
        socket = nccl_logs.NCCL_SOCKET_LOG.split(nccl_logs.NCCL_TABLE_HEAD, 1)[0]
        rows, average = _table(TCP_BUSBW)
        notes = "".join("gpu-platform-smoke: %s\n" % why for why in gdr_blocked)
        return notes + named(socket) + nccl_logs.NCCL_TABLE_HEAD + rows + (
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.3f\n#\n" % average)
    rows, average = _table(bandwidth)
    tail = nccl_logs.NCCL_IB_TAIL.replace("175.888", "%.3f" % average)
    using, rest = nccl_logs.NCCL_IB_INIT.split("\n", 1)
    init = named(using + "\n") + gdr_path_lines([first, second], paths) + named(rest)
    return named(nccl_logs.NCCL_PREAMBLE) + init + nccl_logs.NCCL_TABLE_HEAD + rows + named(tail)


def gang_member(start_time, node):
    """A gang member's line: when its pod started, on which node."""
    return "gpu-platform-smoke started %s on %s\n" % (start_time, node)


def cri_log(text, moment):
    """``text`` in the container runtime's log format KWOK serves: one ``<time> stdout F <line>`` per line."""
    return "".join("%s stdout F %s\n" % (moment, line) for line in text.splitlines())
