"""torch.utils.benchmark.utils.fuzzer: its names, so that scripts import; tapegrad does not generate fuzzed inputs
(torch's draws from NumPy's RandomState in its own order), and making a Fuzzer or a fuzzed parameter or tensor
raises NotImplementedError."""

__all__ = ["Fuzzer", "FuzzedParameter", "FuzzedTensor", "FuzzedSparseTensor", "ParameterAlias"]


class _NotProvided:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"torch.utils.benchmark.{type(self).__name__}: tapegrad's torch.utils.benchmark "
                                  "has Timer, Measurement and Compare, not the input fuzzer")


class Fuzzer(_NotProvided):
    pass


class FuzzedParameter(_NotProvided):
    pass


class FuzzedTensor(_NotProvided):
    pass


class FuzzedSparseTensor(_NotProvided):
    pass


class ParameterAlias(_NotProvided):
    pass
