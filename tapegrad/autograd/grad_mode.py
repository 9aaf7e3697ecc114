"""torch.autograd.grad_mode: the grad-mode state lives at the bottom of the package (tapegrad/grad_mode.py), so
that the engine and the ops read it without importing the autograd API."""
from ..grad_mode import (_state, enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,  # noqa: F401
                         no_grad, set_grad_enabled)
