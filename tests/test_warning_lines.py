"""tapegrad's warnings name the user's line (tapegrad/_warnings.py), however deep inside tapegrad they are raised:
torch's C++ warnings do, and its Python ones do when called from user code."""
import sys
import warnings

import tapegrad as torch


def _lines(calls):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for call in calls:
            call()
    return [(w.filename, w.lineno) for w in caught]


def _attention(mha):
    q = torch.randn(2, 1, 4)
    return mha(q, q, q, key_padding_mask=torch.zeros(1, 2, dtype=torch.bool), attn_mask=torch.zeros(2, 2))


def test_warnings_name_the_callers_line():
    here = sys._getframe().f_code.co_filename
    calls = [
        lambda: torch.nn.Softmax()(torch.randn(2, 3)),  # a module's forward, two calls deep
        lambda: torch.nn.functional.softmax(torch.randn(2, 3)),
        lambda: torch.nn.MSELoss(size_average=False),  # a constructor through the legacy reduction helper
        lambda: torch.nn.functional.mse_loss(torch.randn(3), torch.randn(3, 1)),
        lambda: torch.tensor(torch.ones(2)),
        lambda: _attention(torch.nn.MultiheadAttention(4, 1)),  # four calls deep: it named a line of tapegrad's
    ]
    found = _lines(calls)
    assert len(found) == len(calls)
    lambdas = [c.__code__.co_firstlineno for c in calls]
    lambdas[-1] = _attention.__code__.co_firstlineno + 2
    assert found == [(here, line) for line in lambdas]
