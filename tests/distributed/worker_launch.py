"""Started by python -m tapegrad.distributed.run: prints torchrun's variables and one all_reduce."""
import os
import sys

import tapegrad as torch
import tapegrad.distributed as dist

dist.init_process_group("gloo", init_method="env://")
x = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
v = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                              "OMP_NUM_THREADS")}
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: " + " ".join(f"{k}={x_}" for k, x_ in v.items())
      + f" argv={sys.argv[1:]} sum={x.item()}", flush=True)
dist.destroy_process_group()
