"""nccl-tests logs as a two-node ``all_reduce_perf`` run with NCCL_DEBUG=INFO prints them (16 ranks, H100).

Shared by the smoke domain's unit tests and the simulated smoke pods. Written for these tests in the
format nccl-tests and NCCL print (see plugins/module_utils/domain/smoke/nccl_check.py for the facts).
"""

W0 = "gpu-platform-smoke-nccl-worker-0"
W1 = "gpu-platform-smoke-nccl-worker-1"

NCCL_PREAMBLE = """\
gpu-platform-smoke: all_reduce_perf on {w0}.gpu-platform-smoke-nccl:8,{w1}.gpu-platform-smoke-nccl:8
# nThread 1 nGpus 1 minBytes 536870912 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid     41 on {w0} device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid     42 on {w0} device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid     37 on {w1} device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  9 Group  0 Pid     38 on {w1} device  1 [0x2a] NVIDIA H100 80GB HBM3
{w0}:41:41 [0] NCCL INFO Bootstrap : Using eth0:10.244.3.17<0>
{w0}:41:41 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)
{w0}:41:41 [0] NCCL INFO cudaDriverVersion 12080
NCCL version 2.21.5+cuda12.4
""".format(w0=W0, w1=W1)

NCCL_IB_INIT = """\
{w0}:41:88 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; \
OOB eth0:10.244.3.17<0>
{w0}:41:88 [0] NCCL INFO Using non-device net plugin version 0
{w0}:41:88 [0] NCCL INFO Using network IB
{w1}:37:90 [0] NCCL INFO Using network IB
{w0}:41:88 [0] NCCL INFO ncclCommInitRank comm 0x55d0c8a1e2a0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 \
commId 0x3c1f5e2b9a7d4e10 - Init START
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
{w0}:42:89 [1] NCCL INFO Channel 01/0 : 9[1] -> 1[1] [receive] via NET/IB/1/GDRDMA
{w0}:42:89 [1] NCCL INFO Channel 01/0 : 1[1] -> 9[1] [send] via NET/IB/1/GDRDMA
{w1}:37:90 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [receive] via NET/IB/0/GDRDMA
{w1}:37:90 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/IB/0/GDRDMA
{w1}:38:91 [1] NCCL INFO Channel 00/0 : 9[1] -> 8[0] via P2P/CUMEM/read
{w0}:41:88 [0] NCCL INFO Connected all rings
{w0}:41:88 [0] NCCL INFO Connected all trees
{w0}:41:88 [0] NCCL INFO ncclCommInitRank comm 0x55d0c8a1e2a0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 \
commId 0x3c1f5e2b9a7d4e10 - Init COMPLETE
""".format(w0=W0, w1=W1)

# What NCCL's IB transport prints of each HCA's GPUDirect RDMA path at NCCL_DEBUG=INFO, nvidia-peermem first
# (NVIDIA/nccl src/transport/net_ib.cc, ncclIbGetProperties; its format has no closing quote after the device).
NCCL_GDR_PATHS = {
    "peermem": "{host}:{pid}:88 [0] NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'mlx5_0\n",
    "dmabuf": "{host}:{pid}:88 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0\n",
}
GDR_PATH_ORDER = ("peermem", "dmabuf")

NCCL_TABLE_HEAD = """\
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""

NCCL_IB_ROWS = """\
   536870912     134217728     float     sum      -1   5912.7   90.80  170.25      0   5897.1   91.04  170.70      0
  1073741824     268435456     float     sum      -1  11501.1   93.36  175.05      0  11488.8   93.46  175.24      0
  2147483648     536870912     float     sum      -1  22710.3   94.56  177.30      0  22695.9   94.62  177.41      0
  4294967296    1073741824     float     sum      -1  45234.0   94.95  178.03      0  45200.7   95.02  178.16      0
  8589934592    2147483648     float     sum      -1  90306.3   95.12  178.35      0  90287.3   95.14  178.39      0
"""

NCCL_IB_TAIL = """\
{w0}:41:41 [0] NCCL INFO comm 0x55d0c8a1e2a0 rank 0 nranks 16 cudaDev 0 busId 18000 - Destroy COMPLETE
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 175.888
#
""".format(w0=W0)

NCCL_IB_LOG = NCCL_PREAMBLE + NCCL_IB_INIT + NCCL_TABLE_HEAD + NCCL_IB_ROWS + NCCL_IB_TAIL

# The same two nodes when the RDMA device did not reach the pods: NCCL falls back to TCP sockets.
NCCL_SOCKET_LOG = NCCL_PREAMBLE + """\
{w0}:41:88 [0] NCCL INFO NET/IB : No device found.
{w0}:41:88 [0] NCCL INFO NET/Socket : Using [0]eth0:10.244.3.17<0>
{w0}:41:88 [0] NCCL INFO Using network Socket
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/Socket/0
{w0}:41:88 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0
{w1}:37:90 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [receive] via NET/Socket/0
{w1}:37:90 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/Socket/0
{w0}:41:88 [0] NCCL INFO Connected all rings
""".format(w0=W0, w1=W1) + NCCL_TABLE_HEAD + """\
   536870912     134217728     float     sum      -1    45421   11.82   22.16      0    45498   11.80   22.12      0
  1073741824     268435456     float     sum      -1    90155   11.91   22.33      0    90004   11.93   22.37      0
  2147483648     536870912     float     sum      -1   179405   11.97   22.44      0   179555   11.96   22.43      0
  4294967296    1073741824     float     sum      -1   357616   12.01   22.52      0   357914   12.00   22.50      0
  8589934592    2147483648     float     sum      -1   714637   12.02   22.54      0   714043   12.03   22.56      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 22.3969
#
"""

# An IB run that died in the middle of the table: a remote rank lost its link.
NCCL_CUT_LOG = NCCL_PREAMBLE + NCCL_IB_INIT + NCCL_TABLE_HEAD + NCCL_IB_ROWS.splitlines(True)[0] + """\
{w1}:37:95 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.244.3.17<41829> with \
status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.10.0.2 remoteGids ::ffff:10.10.0.1
{w1}:37:95 [0] NCCL INFO transport/net.cc:1298 -> 6
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
""".format(w1=W1)
