"""torch.nn: Module and the layers, losses and containers built on it; functional; init; utils."""
from . import functional  # noqa: F401
from .modules.linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401  (linear_cross_entropy's chunking)
from . import grad  # noqa: F401  (torch.nn.grad: a convolution's input and weight gradients)
from . import init  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .modules import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout, ELU, Embedding,  # noqa: F401
                      Flatten, GELU, Hardtanh, HuberLoss, Identity, L1Loss, LeakyReLU, Linear, LogSigmoid,
                      LogSoftmax, Module, ModuleDict, ModuleList, MSELoss, NLLLoss, ParameterDict,
                      ParameterList, ReLU, ReLU6, Sequential, Sigmoid, SiLU, SmoothL1Loss, Softmax, Softplus,
                      Tanh, Unflatten)
from .modules import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, BatchNorm1d,  # noqa: F401
                      BatchNorm2d, Conv1d, Conv2d, Dropout1d, Dropout2d, GLU, GroupNorm, Hardswish, LayerNorm,
                      MaxPool1d, MaxPool2d, Mish, PReLU)
from . import utils  # noqa: F401
from . import parallel  # noqa: F401  (DistributedDataParallel, DataParallel)
from . import attention  # noqa: F401,E402  (torch.nn.attention: sdpa_kernel, SDPBackend)
from .modules import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .modules import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                      TransformerEncoder, TransformerEncoderLayer)
from .modules import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .modules import (AdaptiveMaxPool1d, AdaptiveMaxPool2d, Fold, MaxUnpool1d, MaxUnpool2d,  # noqa: F401
                      PixelShuffle, PixelUnshuffle, Unfold, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d)
from .modules import (Bilinear, ChannelShuffle, CosineEmbeddingLoss, CosineSimilarity, EmbeddingBag,  # noqa: F401
                      GaussianNLLLoss, HingeEmbeddingLoss, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
                      MarginRankingLoss, MultiLabelSoftMarginLoss, PairwiseDistance, PoissonNLLLoss, RMSNorm,
                      Softmax2d, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .modules import CTCLoss  # noqa: F401
from .modules import (CELU, SELU, Hardshrink, Hardsigmoid, KLDivLoss, Softmin, Softshrink, Softsign,  # noqa: F401
                      Tanhshrink, Threshold)
from .modules.padding import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: F401
from .modules import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, BatchNorm3d, CrossMapLRN2d,  # noqa: F401
                      LocalResponseNorm, LPPool1d, LPPool2d, LPPool3d, MaxPool3d, MaxUnpool3d, SyncBatchNorm)
from .modules import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401,E402
from .modules import (AdaptiveLogSoftmaxWithLoss, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,  # noqa: F401
                      LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                      LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, MultiLabelMarginLoss, MultiMarginLoss,
                      NLLLoss2d, SoftMarginLoss)
from .modules import AlphaDropout, Dropout3d, FeatureAlphaDropout, RReLU  # noqa: F401
from .modules.attention import multi_head_attention_forward as _mha_forward  # noqa: E402
functional.multi_head_attention_forward = _mha_forward  # (torch.nn.functional's, defined beside the module it computes)
del _mha_forward
