"""torch.distributed.elastic: what training scripts import from it (errors.record); tapegrad's launcher is
tapegrad.distributed.run, which starts its processes through MPI, not through torchelastic's agent."""
