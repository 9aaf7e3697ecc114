"""Op front-ends: check arguments (torch's errors), promote dtypes, run the NumPy forward, record.

One module per concern; each public function here is also a `tapegrad.` function, and most are Tensor
methods (methods.py). Every check happens before a value reaches the tape, so the compiled replay
never sees a bad shape or index.
"""
from ._common import _dim, _dims, _sizes_or_keyword, _tensor, broadcast_shape, detach, to_dtype  # noqa: F401
from .elementwise import *  # noqa: F401,F403
from .elementwise import _clamp, _select, _with_input  # noqa: F401
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .shape import _gather, _index_key, _index_map  # noqa: F401
from .linalg import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from . import elementwise as _e, reduce as _r, shape as _s, linalg as _l, loss as _o
from .elementwise import abs, pow, round  # noqa: F401
from .reduce import sum, sum_to_shape  # noqa: F401
from .shape import getitem, scatter_flat  # noqa: F401
from .nn import *  # noqa: F401,F403  (after elementwise: its clamp, gelu, round take tensor/keyword arguments)
# nn's clamp, clamp_min, clamp_max, gelu and round wrap elementwise's number-only front-ends of the same name
from .nn import clamp, clamp_max, clamp_min, clip, gelu, round  # noqa: F401,E402
from . import nn as _n
from .sort import *  # noqa: F401,F403
from .layout import *  # noqa: F401,F403
from .sort import __all__ as _so_all
from .layout import __all__ as _la_all
from .sparse import *  # noqa: F401,F403  (sparse COO; its mm and matmul take sparse operands: tapegrad.mm, tapegrad.matmul)
from .sparse import __all__ as _sp_all
from . import rnn as _rnn  # noqa: F401  (registers the fused LSTM/GRU cell rows)
from .conv import *  # noqa: F401,F403
from . import conv as _c
from .resample import *  # noqa: F401,F403  (unfold/fold, interpolate, pixel shuffle, adaptive max, unpooling)
from .resample import __all__ as _rs_all
from .composite import *  # noqa: F401,F403  (functions composed of the ops above; torch's aliases)
from .composite import __all__ as _co_all, INPLACE as _co_inplace
from . import pointwise as _pw, arrange as _ar, scatter as _sc, statistics as _st, special as _sf
from . import decompositions as _de, lu as _lu, volumetric as _vo, sampling as _sa
from .pointwise import *  # noqa: F401,F403  (fmod, remainder, hypot, logaddexp, bitwise ops, dtype helpers, ...)
from .arrange import *  # noqa: F401,F403  (rot90, tensor_split, kron, tensordot, cdist, baddbmm, ...)
from .scatter import *  # noqa: F401,F403  (scatter, index_add/fill/copy, index_put, searchsorted, bincount)
from .statistics import *  # noqa: F401,F403  (cumulative ops, median, quantile, nan-reductions, mode)
from .special import *  # noqa: F401,F403  (lgamma, digamma, polygamma, erfinv, i0, xlogy: the special functions)
from .decompositions import *  # noqa: F401,F403  (det, inverse, solve, cholesky, qr, svd, eigh; products)
from .lu import *  # noqa: F401,F403  (lu, lu_unpack, lu_solve, triangular_solve, geqrf, orgqr, ormqr)
from .volumetric import *  # noqa: F401,F403  (3-d pooling, power-average pooling, local response normalization)
from .sampling import *  # noqa: F401,F403  (torch.normal, poisson, binomial; the random fills' draws)
from . import comparison as _cm, windows as _wi, histogram as _hi, diagonals as _di, tensor_info as _ti
from .comparison import *  # noqa: F401,F403  (isclose, isin, unravel_index)
from .windows import *  # noqa: F401,F403  (hann, hamming, blackman, bartlett, kaiser windows)
from .histogram import *  # noqa: F401,F403  (histogram, histogramdd)
from .diagonals import *  # noqa: F401,F403  (diag_embed; Tensor.fill_diagonal_)
from .tensor_info import *  # noqa: F401,F403  (conj & co. on real tensors, adjoint, typename, torch.exp_ & co.)

# the Tensor methods with in-place forms (`x.scatter_`), listed by the modules that bind them (methods.py makes them)
INPLACE = (_co_inplace + _pw.INPLACE + _ar.INPLACE + _sc.INPLACE + _st.INPLACE + _sf.INPLACE + _de.INPLACE + _vo.INPLACE
           + _lu.INPLACE + _sa.INPLACE + _cm.INPLACE + _wi.INPLACE + _hi.INPLACE + _di.INPLACE + _ti.INPLACE)

__all__ = ([n for m in (_e, _r, _s, _l, _o, _n, _c, _pw, _ar, _sc, _st, _sf, _de, _lu, _vo, _sa, _cm, _wi, _hi, _di, _ti)
            for n in m.__all__] + ["detach"]
           + _so_all + _la_all + _sp_all + _rs_all + _co_all)
del _e, _r, _s, _l, _o, _n, _c, _pw, _ar, _sc, _st, _sf, _de, _lu, _vo, _sa, _cm, _wi, _hi, _di, _ti, _so_all, _la_all, _sp_all, _rs_all, _co_all, _co_inplace

from . import out as _out  # noqa: E402  (out= on torch's functions: once every front-end above is bound)
_out.bind()
del _out
