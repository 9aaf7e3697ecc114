"""torch.distributed on MPI: process groups, collectives and point-to-point on tensors (see docs/distributed.md).

Importing this package does not import mpi4py (which starts MPI); init_process_group does.
"""
from .distributed_c10d import (Backend, GroupMember, ProcessGroup, ReduceOp, Work, all_gather,  # noqa: F401
                               all_gather_into_tensor, all_gather_object, all_reduce, all_to_all_single, barrier,
                               broadcast, broadcast_object_list, default_pg_timeout, destroy_process_group, gather,
                               gather_object, get_backend, get_global_rank, get_group_rank,
                               get_default_backend_for_device, get_process_group_ranks, get_rank, get_world_size,
                               group, init_process_group,
                               irecv, is_available, is_gloo_available, is_initialized, is_mpi_available,
                               is_nccl_available, is_torchelastic_launched, isend, new_group, recv, reduce,
                               reduce_op, reduce_scatter_tensor, scatter, send)
