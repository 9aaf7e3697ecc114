"""RemovableHandle, as torch.utils.hooks: what registering a module or optimizer hook returns."""


class RemovableHandle:
    _next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        # (dicts keyed by the same id that mark the hook: with_kwargs, always_call; removed with it)
        self.extra_dict_ref = () if extra_dict is None else tuple(extra_dict) if isinstance(extra_dict, list) \
            else (extra_dict,)

    def remove(self):
        self.hooks_dict.pop(self.id, None)
        for extra in self.extra_dict_ref:
            extra.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()
