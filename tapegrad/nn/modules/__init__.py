"""torch.nn.modules: the Module base class and the layers built on it."""
from .module import (Module, register_module_backward_hook, register_module_forward_hook,  # noqa: F401
                     register_module_forward_pre_hook, register_module_full_backward_hook,
                     register_module_full_backward_pre_hook)
from .linear import Identity, Linear  # noqa: F401
from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, ReLU, ReLU6,  # noqa: F401
                         Sigmoid, SiLU, Softmax, Softplus, Tanh)
from .flatten import Flatten, Unflatten  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss,  # noqa: F401
                   NLLLoss, SmoothL1Loss)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
from .dropout import Dropout1d, Dropout2d  # noqa: F401
from .conv import Conv1d, Conv2d  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d,  # noqa: F401
                      MaxPool2d)
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm  # noqa: F401
from .pointwise import GLU, Hardswish, Mish, PReLU  # noqa: F401
from .conv import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d, MaxUnpool1d, MaxUnpool2d  # noqa: F401
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
# normalization, distances, misc layers and losses (issue 19)
from .normalization import RMSNorm  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .linear import Bilinear  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .activation import Softmax2d  # noqa: F401
from .sparse import EmbeddingBag  # noqa: F401
from .loss import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,  # noqa: F401
                   MultiLabelSoftMarginLoss, PoissonNLLLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .loss import CTCLoss  # noqa: F401
from .activation import (CELU, SELU, Hardshrink, Hardsigmoid, Softmin, Softshrink, Softsign,  # noqa: F401
                         Tanhshrink, Threshold)
from .padding import *  # noqa: F401,F403
from .loss import KLDivLoss  # noqa: F401
from .pooling import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d,  # noqa: F401
                      MaxPool3d, MaxUnpool3d)
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401,E402
from .normalization import BatchNorm3d, CrossMapLRN2d, LocalResponseNorm, SyncBatchNorm  # noqa: F401
from .loss import MultiLabelMarginLoss, MultiMarginLoss, NLLLoss2d, SoftMarginLoss  # noqa: F401
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .linear import LazyLinear  # noqa: F401
from .conv import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,  # noqa: F401
                   LazyConvTranspose3d)
from .normalization import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .instancenorm import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401
from .activation import RReLU  # noqa: F401
from .dropout import AlphaDropout, Dropout3d, FeatureAlphaDropout  # noqa: F401
