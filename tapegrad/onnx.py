"""torch.onnx: importable, so scripts that import it at the top run; exporting is not implemented."""


def export(*args, **kwargs):
    raise NotImplementedError("tapegrad: torch.onnx.export is not implemented (tapegrad records no graph "
                              "that ONNX could describe)")


def is_in_onnx_export():
    return False
