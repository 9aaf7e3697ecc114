"""torch.autograd's anomaly mode: its state lives beside the tape (tapegrad/anomaly.py), which the engine
reads without importing the autograd API."""
from ..anomaly import (_plain_record, _set, _trace, detect_anomaly, inducing,  # noqa: F401
                       is_anomaly_check_nan_enabled, is_anomaly_enabled, nan_message, set_detect_anomaly, warn_error)
