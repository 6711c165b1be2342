"""PyTorch: ATen's CUDA/HIP kernels (launchers unwrapped to their functor, ``kernel_heads``) and
``aten::`` host ops; fbgemm_gpu's embedding and bookkeeping kernels."""

from __future__ import annotations

from .base import Family

_AT = "pytorch/pytorch aten/src/ATen/native/cuda/"
_OPS = "pytorch/pytorch aten/src/ATen/native/native_functions.yaml"
_FBGEMM = "pytorch/FBGEMM fbgemm_gpu/"

# Element-wise and tensor-bookkeeping aten ops: unfused work that is not "other".
ELEMENTWISE_OPS = (
    "add|add_|sub|sub_|mul|mul_|div|div_|pow|rsqrt|sqrt|exp|log|neg|abs|clamp|clamp_|"
    "maximum|minimum|max|min|mean|sum|prod|cumsum|where|masked_fill|masked_fill_|"
    "softmax|_softmax|log_softmax|_log_softmax|eq|ne|lt|le|gt|ge|logical_and|logical_or|"
    "bitwise_and|bitwise_or|reciprocal|sign|floor|ceil|round|remainder|fmod|lerp|"
    "cat|stack|index|index_put_|index_select|gather|scatter|scatter_|scatter_add_|"
    "repeat|repeat_interleave|flip|roll|tril|triu|outer|clone|contiguous|arange|"
    "zeros|zeros_like|ones|ones_like|full|full_like|empty|empty_like|empty_strided|new_empty|"
    "new_zeros|new_full|view|reshape|_reshape_alias|_unsafe_view|as_strided|slice|select|"
    "narrow|split|split_with_sizes|chunk|unbind|squeeze|unsqueeze|permute|transpose|t|expand|"
    "flatten|unflatten|view_as|detach|alias|lift_fresh|resolve_conj|resolve_neg|result_type|"
    "item|_local_scalar_dense|is_nonzero|nonzero|any|all|argmax|argmin|sort|numel|size|"
    "bucketize|searchsorted|pad|constant_pad_nd|_to_dim_order_copy|type_as|bernoulli_|uniform_|"
    "exponential_|normal_|rand|randn|randint|random_|set_|record_stream|_pin_memory|pin_memory|"
    "is_pinned|lift_fresh_copy|fill_|zero_|copy_|to|_to_copy|dropout|baddbmm_|resize_|expand_as|"
    "_foreach_copy_|numpy_T|_assert_async|_assert_tensor_metadata|diff|_foreach_\\w+"
)

ROWS: list[Family] = [
    # --- ATen CUDA/HIP kernels, by the functor or kernel their launcher runs -------------------------
    Family(
        r"^at::native::ReduceOp$",
        "sampling",
        _AT + "ReduceArgMaxKernel.cu (greedy sampling is an argmax over the logits)",
        args=r"ArgM(ax|in)Ops",
    ),
    Family(
        r"^at::native::\w*(sigmoid|tanh|silu|gelu|threshold|relu|softplus|hardswish|hardsigmoid|elu|mish)\w*",
        "activation",
        _AT
        + "ActivationSiluKernel.cu, ActivationGeluKernel.cu, UnarySpecialOpsKernel.cu (sigmoid), UnaryGeometricTanhKernel.cu",
    ),
    Family(
        r"^at::native::\w*(layer_?norm|LayerNorm|GammaBetaBackward|GradGammaBeta|RowwiseMoments|ComputeInternalGradients|"
        r"batch_?norm|group_?norm|rms_?norm)\w*",
        "norm",
        _AT + "layer_norm_kernel.cu (cuComputePartGradGammaBeta on ROCm), group_norm_kernel.cu, Normalization.cuh",
    ),
    Family(r"^at::native::\w*embedding\w*", "embedding", _AT + "Embedding.cu, EmbeddingBag.cu"),
    Family(r"^at::native::\w*(conv|im2col|col2im)\w*", "convolution", _AT + "DepthwiseConv2d.cu, im2col.cuh"),
    Family(
        r"^at::native::|^at_cuda_detail::|^cunn_|^(at::native::)?(sbtopk|mbtopk)::",
        "elementwise",
        _AT + "CUDALoops.cuh, Reduce.cuh, Indexing.cu, TensorTopK.cu, PersistentSoftmax.cuh, SoftMax.cu: "
        "element-wise, reductions, indexing, copies, sorting",
    ),
    # --- aten host ops ------------------------------------------------------------------------------------
    Family(r"^aten::(mm|addmm|bmm|linear|matmul|baddbmm|_addmm_activation|_scaled_mm|_int_mm)$", "gemm", _OPS),
    Family(
        r"^aten::(silu|silu_|gelu|gelu_|relu|relu_|sigmoid|sigmoid_|tanh|tanh_|softplus|hardswish)$", "activation", _OPS
    ),
    Family(r"^aten::(layer_norm|native_layer_norm|group_norm|batch_norm|rms_norm|_fused_rms_norm|norm)$", "norm", _OPS),
    Family(r"^aten::(embedding|embedding_bag|_embedding_bag)$", "embedding", _OPS),
    Family(r"^aten::(topk|multinomial)$", "sampling", _OPS + " (top-k / multinomial of the sampler)"),
    Family(r"^aten::(convolution|_convolution|conv\w*|cudnn_convolution\w*)$", "convolution", _OPS),
    Family(rf"^aten::({ELEMENTWISE_OPS})$", "elementwise", _OPS),
    # --- fbgemm_gpu ---------------------------------------------------------------------------------------
    Family(
        r"split_embedding\w*|bounds_check_indices|pooled_embs|^fbgemm_gpu::\w*embedding",
        "embedding",
        _FBGEMM + "codegen/ (split_embedding_*), src/split_embeddings_utils/",
    ),
    Family(r"_FP8rowwise|_get_FP8_qparam|^fbgemm_gpu::\w*quantize", "quantization", _FBGEMM + "src/quantize_ops/"),
    Family(
        r"^fbgemm_gpu::(permute|_offsets|_block_bucketize|jagged|recat|linearize)\w*|"
        r"^fbgemm::\w*(permute|jagged|index|offsets|bounds|segment|pack|sort)|recat_copy|linearize_index",
        "elementwise",
        _FBGEMM + "src/sparse_ops/, src/jagged_tensor_ops/",
    ),
]
