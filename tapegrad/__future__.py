"""torch.__future__: how nn.Module's conversions (`to`, `double`, `_apply`) treat parameters. By default a parameter
keeps its object and takes the converted data; with overwrite, each becomes a new Parameter (its .grad converted
with it); with swap, torch swaps the tensors' contents (torch.utils.swap_tensors), whose result tapegrad gives by
the default path: the same Parameter objects, holding the converted data."""

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value):
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion():
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value):
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion():
    return _swap_module_params_on_conversion
