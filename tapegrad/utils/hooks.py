"""RemovableHandle, as torch.utils.hooks: what registering a module or optimizer hook returns."""


class RemovableHandle:
    _next_id = 0

    def __init__(self, hooks_dict):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()
