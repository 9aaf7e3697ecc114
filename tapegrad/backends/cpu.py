"""torch.backends.cpu: tapegrad's kernels do not dispatch on the CPU's vector extensions (NumPy and Numba choose
their own), so the capability is torch's name for that: "DEFAULT"."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    return "DEFAULT"
