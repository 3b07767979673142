"""Op types a graph file may name without a warning, beyond the engine table and the cost table.

`ONNX_OPS` are the standard ONNX operators (domains ai.onnx, ai.onnx.ml, com.microsoft; listed
from onnx.defs once, so that checking a graph never imports onnx): graph files imported from ONNX
models keep these names. `GENERATED_OPS` are the types `streamalloc train-step` writes, besides
`<Type>Grad` and `<Type>WeightGrad` of a known type (`known_op_type`).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

_ONNX_NAMES = """
    Abs Acos Acosh Add AffineGrid And ArgMax ArgMin ArrayFeatureExtractor Asin Asinh Atan
    Atanh Attention AveragePool BatchNormalization Bernoulli Binarizer BitCast BitShift
    BitwiseAnd BitwiseNot BitwiseOr BitwiseXor BlackmanWindow Cast CastLike CastMap
    CategoryMapper CausalConvWithState Ceil Celu CenterCropPad Clip Col2Im Compress Concat
    ConcatFromSequence Constant ConstantOfShape Conv ConvInteger ConvTranspose Cos Cosh
    CumProd CumSum DFT DeformConv DepthToSpace DequantizeLinear Det DictVectorizer Div Dropout
    DynamicQuantizeLinear Einsum Elu Equal Erf Exp Expand EyeLike FeatureVectorizer Flatten
    Floor GRU Gather GatherElements GatherND Gelu Gemm GlobalAveragePool GlobalLpPool
    GlobalMaxPool Greater GreaterOrEqual GridSample GroupNormalization HammingWindow
    HannWindow HardSigmoid HardSwish Hardmax Identity If ImageDecoder Imputer
    InstanceNormalization IsInf IsNaN LRN LSTM LabelEncoder LayerNormalization LeakyRelu Less
    LessOrEqual LinearAttention LinearClassifier LinearRegressor Log LogSoftmax Loop
    LpNormalization LpPool MatMul MatMulInteger Max MaxPool MaxRoiPool MaxUnpool Mean
    MeanVarianceNormalization MelWeightMatrix Min Mish Mod Mul Multinomial Neg
    NegativeLogLikelihoodLoss NonMaxSuppression NonZero Normalizer Not OneHot OneHotEncoder
    Optional OptionalGetElement OptionalHasElement Or PRelu Pad Pow QLinearConv QLinearMatMul
    QuantizeLinear RMSNormalization RNN RandomNormal RandomNormalLike RandomUniform
    RandomUniformLike Range Reciprocal ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp
    ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare RegexFullMatch Relu
    Reshape Resize ReverseSequence RoiAlign RotaryEmbedding Round STFT SVMClassifier
    SVMRegressor Scaler Scan Scatter ScatterElements ScatterND Selu SequenceAt
    SequenceConstruct SequenceEmpty SequenceErase SequenceInsert SequenceLength SequenceMap
    Shape Shrink Sigmoid Sign Sin Sinh Size Slice Softmax SoftmaxCrossEntropyLoss Softplus
    Softsign SpaceToDepth Split SplitToSequence Sqrt Squeeze StringConcat StringNormalizer
    StringSplit Sub Sum SwiGLU Swish Tan Tanh TensorScatter TfIdfVectorizer ThresholdedRelu
    Tile TopK Transpose TreeEnsemble TreeEnsembleClassifier TreeEnsembleRegressor Trilu Unique
    Unsqueeze Upsample Where Xor ZipMap
"""
ONNX_OPS = frozenset(_ONNX_NAMES.split())
GENERATED_OPS = frozenset({"ApplyGradientDescent", "BNTrainingReduceGrad",
                           "BNTrainingUpdateGrad", "Conv2DBackpropFilter",
                           "Conv2DBackpropInput", "ReduceMean"})
_SUFFIXES = ("WeightGrad", "Grad")
_VARIANT = re.compile(r"V[0-9]+|D|V[0-9]+D|Ext|Fusion|Grad")


def known_op_type(op_type: str, also: Container[str] = ()) -> bool:
    """Whether `op_type` is an op type the tool knows (`also`: the engine and cost tables'
    types), directly or as the gradient of one."""
    candidates = [op_type, *(op_type.removesuffix(s) for s in _SUFFIXES if op_type.endswith(s))]
    return any(t in ONNX_OPS or t in GENERATED_OPS or t in also for t in candidates)


def near_op_type(op_type: str, also: Iterable[str] = ()) -> str | None:
    """The known op type `op_type` is most likely a typo of: same letters in another case, or
    an edit distance <= 2 for types of 5 letters or more; None when none is that close."""
    from streamalloc.ir.options import edit_distance
    lower = op_type.lower()
    best: tuple[int, str] | None = None
    for known in sorted({*ONNX_OPS, *GENERATED_OPS, *also}):
        if abs(len(known) - len(op_type)) > 2:
            continue
        if _VARIANT.fullmatch(op_type.removeprefix(known)) and op_type.startswith(known):
            return None  # GE's variants of a known op: SoftmaxV2, ConcatD, LayerNormV3
        distance = 0 if known.lower() == lower else edit_distance(lower, known.lower(), cap=2)
        shortest = min(len(known), len(op_type))
        limit = 2 if shortest >= 6 else 1 if shortest >= 4 else 0
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, known)
    return best[1] if best else None
