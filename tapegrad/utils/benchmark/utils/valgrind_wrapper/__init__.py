"""torch.utils.benchmark.utils.valgrind_wrapper: Callgrind's results (no Callgrind here: timer_interface)."""
