"""Type hints on the public API (the architecture issue's "type hints on the public API and the
kit").  For each module below, every public function (its __all__, less the functions it only
re-exports, as dataloader's default_collate; creation.py and views.py, which have none: their
public functions torchlite exports at the top level) and every class of __all__ (the nn and optim
modules' classes, random's Generator, the data modules' datasets, samplers and DataLoader) with
its __init__, forward, step, other public methods and special methods defined in that module,
annotates every parameter (but self, cls, *args and **kwargs) and its return.  The annotations
must also evaluate (typing.get_type_hints, with torchlite's Tensor, dtype, device, Size, layout,
memory_format, Generator, nn.Module, optim.Optimizer, nn.utils.rnn.PackedSequence,
utils.data.Dataset and utils.data.Sampler and the typing names at hand), so a misspelled name
fails here; and each module has `from __future__ import annotations`, so none is evaluated on
import."""
import __future__
import collections.abc
import importlib
import inspect
import typing

import pytest

import torchlite

MODULES = {   # module: a few of the names it must cover (so the check is never vacuous)
    "torchlite._ops.creation": ["tensor", "zeros", "arange", "linspace", "eye", "zeros_like"],
    "torchlite._ops.reduction": ["sum", "mean", "max", "var_mean", "softmax"],
    "torchlite._ops.joining": ["cat", "stack", "split", "meshgrid"],
    "torchlite.nn.modules.linear": ["Linear.__init__", "Linear.forward", "Bilinear.forward"],
    "torchlite.nn.modules.conv": ["Conv2d.__init__", "Conv2d.forward", "ConvTranspose2d.forward"],
    "torchlite.nn.modules.container": ["Sequential.__init__", "ModuleList.append", "ParameterDict.update"],
    "torchlite.nn.modules.activation": ["ReLU.__init__", "ReLU.forward", "Softmax.forward"],
    "torchlite.optim.optimizer": ["Optimizer.step", "Optimizer.zero_grad", "Optimizer.state_dict",
                                  "Optimizer.load_state_dict", "Optimizer.add_param_group"],
    "torchlite.optim.sgd": ["SGD.__init__", "sgd"],
    "torchlite.optim.adam": ["Adam.__init__", "adam"],
    "torchlite.optim.adamw": ["AdamW.__init__", "adamw"],
    "torchlite._ops.linalg": ["matmul", "mm", "addmm", "einsum", "tensordot", "kron", "norm"],
    "torchlite._ops.sorting": ["sort", "topk", "unique", "searchsorted", "isin"],
    "torchlite._ops.indexing": ["gather", "scatter", "index_select", "masked_fill", "nonzero",
                                "unravel_index"],
    "torchlite.nn.modules.rnn": ["RNNBase.__init__", "RNNBase.forward", "LSTM.__init__",
                                 "LSTMCell.forward", "GRUCell.__init__"],
    "torchlite.nn.modules.transformer": ["Transformer.__init__", "Transformer.forward",
                                         "Transformer.generate_square_subsequent_mask",
                                         "TransformerEncoder.forward",
                                         "TransformerDecoderLayer.forward"],
    "torchlite.nn.modules.dropout": ["Dropout.__init__", "Dropout.forward", "Dropout2d.forward"],
    "torchlite.nn.modules.flatten": ["Flatten.__init__", "Unflatten.__init__", "Unflatten.forward"],
    "torchlite.nn.modules.padding": ["ConstantPad2d.__init__", "ZeroPad2d.__init__",
                                     "ReflectionPad1d.forward", "CircularPad2d.forward"],
    "torchlite.optim.rmsprop": ["RMSprop.__init__", "rmsprop"],
    "torchlite.optim.adagrad": ["Adagrad.__init__", "adagrad"],
    "torchlite.optim.lr_scheduler": ["LRScheduler.step", "LRScheduler.get_last_lr",
                                     "LRScheduler.state_dict", "LambdaLR.load_state_dict",
                                     "StepLR.__init__", "ReduceLROnPlateau.step",
                                     "CyclicLR.state_dict", "SequentialLR.step"],
    "torchlite.nn.functional.activation": ["relu", "leaky_relu", "gelu", "softmax", "log_softmax",
                                           "threshold", "gumbel_softmax"],
    "torchlite.nn.functional.conv": ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"],
    "torchlite.nn.functional.linear": ["linear", "bilinear"],
    "torchlite.nn.functional.pooling": ["max_pool2d", "max_pool2d_with_indices", "avg_pool2d",
                                        "adaptive_avg_pool2d", "max_unpool2d", "lp_pool2d"],
    "torchlite.nn.functional.normalization": ["batch_norm", "layer_norm", "group_norm", "rms_norm",
                                              "normalize"],
    "torchlite.nn.functional.dropout": ["dropout", "dropout2d", "alpha_dropout"],
    "torchlite.nn.functional.loss": ["cross_entropy", "nll_loss", "mse_loss",
                                     "binary_cross_entropy_with_logits", "kl_div",
                                     "triplet_margin_with_distance_loss"],
    "torchlite.nn.functional.distance": ["pairwise_distance", "cosine_similarity", "pdist"],
    "torchlite.nn.functional.vision": ["pad", "interpolate", "unfold", "fold", "pixel_shuffle"],
    "torchlite.nn.modules.module": ["Module.__init__", "Module.__call__", "Module.forward",
                                    "Module.parameters", "Module.named_modules", "Module.state_dict",
                                    "Module.load_state_dict", "Module.to", "Module.register_buffer",
                                    "Module.register_forward_hook", "Module.get_submodule"],
    "torchlite.nn.modules.normalization": ["BatchNorm2d.__init__", "BatchNorm2d.forward",
                                           "InstanceNorm1d.__init__", "LayerNorm.__init__",
                                           "GroupNorm.forward", "RMSNorm.__init__"],
    "torchlite.nn.modules.loss": ["MSELoss.__init__", "MSELoss.forward", "CrossEntropyLoss.__init__",
                                  "TripletMarginLoss.forward", "GaussianNLLLoss.forward",
                                  "LinearCrossEntropyLoss.__init__"],
    "torchlite.nn.modules.pooling": ["MaxPool2d.__init__", "MaxPool2d.forward", "AvgPool2d.__init__",
                                     "AdaptiveAvgPool2d.__init__", "MaxUnpool2d.forward",
                                     "LPPool2d.__init__"],
    "torchlite.nn.modules.sparse": ["Embedding.__init__", "Embedding.forward", "Embedding.from_pretrained",
                                    "EmbeddingBag.forward"],
    "torchlite.nn.modules.upsampling": ["Upsample.__init__", "Upsample.forward",
                                        "UpsamplingBilinear2d.__init__"],
    "torchlite.nn.modules.fold": ["Fold.__init__", "Fold.forward", "Unfold.__init__"],
    "torchlite.nn.modules.shuffle": ["PixelShuffle.__init__", "PixelShuffle.forward",
                                     "ChannelShuffle.forward"],
    "torchlite.nn.modules.distance": ["PairwiseDistance.__init__", "CosineSimilarity.forward"],
    "torchlite._ops.views": ["reshape", "permute", "transpose", "squeeze", "flatten", "narrow",
                             "as_strided", "flip", "clone", "broadcast_shapes", "view_copy",
                             "slice_copy"],
    "torchlite._ops.random": ["Generator.__init__", "Generator.get_state", "manual_seed", "rand",
                              "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
                              "rand_like"],
    "torchlite.optim.adadelta": ["Adadelta.__init__", "adadelta"],
    "torchlite.optim.adamax": ["Adamax.__init__", "adamax"],
    "torchlite.optim.nadam": ["NAdam.__init__", "nadam"],
    "torchlite.optim.radam": ["RAdam.__init__", "radam"],
    "torchlite.optim.asgd": ["ASGD.__init__", "asgd"],
    "torchlite.optim.rprop": ["Rprop.__init__", "rprop"],
    "torchlite.optim.lbfgs": ["LBFGS.__init__", "LBFGS.step"],
    "torchlite.optim.sparse_adam": ["SparseAdam.__init__"],
    "torchlite.optim.adafactor": ["Adafactor.__init__", "adafactor"],
    "torchlite.optim.muon": ["Muon.__init__", "muon"],
    "torchlite.optim.swa_utils": ["AveragedModel.__init__", "AveragedModel.forward",
                                  "AveragedModel.update_parameters", "update_bn", "SWALR.__init__",
                                  "SWALR.get_lr", "SWALR.state_dict", "get_ema_multi_avg_fn",
                                  "get_swa_avg_fn"],
    "torchlite.utils.data.dataloader": ["DataLoader.__init__", "DataLoader.__iter__",
                                        "DataLoader.__len__",
                                        "DataLoader.check_worker_number_rationality"],
    "torchlite.utils.data.dataset": ["Dataset.__getitem__", "Dataset.__add__", "IterableDataset.__iter__",
                                     "TensorDataset.__init__", "StackDataset.__getitems__",
                                     "ConcatDataset.cumsum", "ChainDataset.__len__", "Subset.__init__",
                                     "random_split"],
    "torchlite.utils.data.sampler": ["Sampler.__iter__", "SequentialSampler.__init__",
                                     "RandomSampler.__init__", "RandomSampler.__iter__",
                                     "SubsetRandomSampler.__len__", "WeightedRandomSampler.__init__",
                                     "BatchSampler.__init__", "BatchSampler.__iter__"],
    "torchlite.utils.data.distributed": ["DistributedSampler.__init__", "DistributedSampler.__iter__",
                                         "DistributedSampler.__len__", "DistributedSampler.set_epoch"],
    "torchlite._ops.elementwise": ["add", "sub", "mul", "div", "pow", "where", "clamp", "exp", "exp_", "sin",
                                   "atan2", "eq", "isnan", "neg", "deg2rad", "frexp", "allclose"],
    "torchlite._tensor": ["Tensor.size", "Tensor.dim", "Tensor.numel", "Tensor.item", "Tensor.detach",
                          "Tensor.__len__", "Tensor.__iter__", "Tensor.__repr__", "Tensor.__bool__",
                          "Tensor.register_hook", "Tensor.requires_grad_", "Tensor.tolist"],
    "torchlite._ops.fft": ["fft", "ifft", "rfft", "fft2", "fftn", "irfftn", "fftfreq", "fftshift"],
    "torchlite._ops.conversion": [],
    "torchlite._ops.linalg_decomp": ["det", "slogdet", "svd", "qr", "cholesky", "matrix_exp", "lu_unpack",
                                     "triangular_solve"],
    "torchlite._ops.method_forms": ["detach", "fill_", "arccos_", "is_complex"],
    "torchlite._ops.complex": ["view_as_real", "view_as_complex", "real", "imag", "complex", "polar"],
    "torchlite._ops.special": ["polygamma", "mvlgamma", "i0", "i0_", "igamma", "kaiser_window"],
    "torchlite._ops.rnn": ["lstm_step_forward", "lstm_forward_steps", "pack_right", "mm_packed"],
    "torchlite._ops.storage": ["UntypedStorage.__init__", "UntypedStorage.__getitem__",
                               "UntypedStorage.size", "TypedStorage.__init__", "TypedStorage.type",
                               "TypedStorage.float"],
    "torchlite._ops.legacy_types": ["FloatTensor.__new__", "LongTensor.__new__", "set_default_tensor_type"],
    "torchlite._ops.removed": ["eig", "lstsq", "solve"],
    "torchlite._ops.lowrank": ["svd_lowrank", "pca_lowrank"],
    "torchlite._ops.optim": ["sgd_step", "sgd_steps", "adam_step"],
    "torchlite.return_types": ["max.__repr__", "sort.__repr__", "linalg_svd.__repr__"],
    "torchlite.special": ["multigammaln", "softmax", "log_softmax"],
    "torchlite.linalg": ["diagonal", "vander"],
    "torchlite.masked._ops": ["sum", "mean", "var", "softmax", "normalize", "logaddexp"],
    "torchlite.nn.parameter": ["Parameter.__new__", "Parameter.__repr__", "Buffer.__new__",
                               "UninitializedParameter.__new__", "UninitializedParameter.materialize"],
    "torchlite.futures": ["Future.__init__", "Future.wait", "Future.then", "collect_all", "wait_all"],
    "torchlite.serialization": ["save", "load", "add_safe_globals", "safe_globals.__init__",
                                "get_unsafe_globals_in_checkpoint"],
    "torchlite.library": ["custom_op", "CustomOpDef.__init__", "CustomOpDef.__call__", "register_fake",
                          "infer_schema"],
    "torchlite.func": ["grad", "vjp", "jvp", "jacrev", "vmap", "functional_call", "stack_module_state"],
    "torchlite.signal.windows": ["hann", "kaiser", "general_cosine", "gaussian"],
    "torchlite.testing": [],
    "torchlite.hub": ["load", "list", "help", "load_state_dict_from_url", "get_dir"],
    "torchlite.utils.checkpoint": ["checkpoint", "checkpoint_sequential"],
    "torchlite.utils": ["swap_tensors"],
    "torchlite.nn.modules.lazy": ["LazyModuleMixin.__init__", "LazyLinear.__init__",
                                  "LazyLinear.initialize_parameters", "LazyConv2d.__init__",
                                  "LazyConvTranspose1d.__init__", "LazyBatchNorm2d.__init__"],
    "torchlite.nn.modules.pooling3d": ["MaxPool3d.forward", "AvgPool3d.__init__", "MaxUnpool3d.forward",
                                       "LPPool3d.forward"],
    "torchlite.nn.modules.conv3d": ["ConvTranspose3d.forward"],
    "torchlite.nn.modules.attention": ["MultiheadAttention.__init__", "MultiheadAttention.forward",
                                       "MultiheadAttention.merge_masks"],
    "torchlite.nn.modules.adaptive": ["AdaptiveLogSoftmaxWithLoss.__init__",
                                      "AdaptiveLogSoftmaxWithLoss.forward",
                                      "AdaptiveLogSoftmaxWithLoss.predict"],
    "torchlite.nn.modules.fractional_pooling": ["FractionalMaxPool2d.__init__",
                                                "FractionalMaxPool3d.forward"],
    "torchlite.nn.modules.ctc": ["CTCLoss.__init__", "CTCLoss.forward"],
    "torchlite.nn.modules.sync_batchnorm": ["SyncBatchNorm.__init__", "SyncBatchNorm.forward",
                                            "SyncBatchNorm.convert_sync_batchnorm"],
    "torchlite.nn.modules.utils": [],
    "torchlite.nn.init": ["calculate_gain", "uniform_", "kaiming_uniform_", "orthogonal_", "sparse_"],
    "torchlite.nn.grad": ["conv1d_input", "conv2d_weight", "conv3d_input"],
    "torchlite.nn.utils.prune": ["BasePruningMethod.apply", "BasePruningMethod.compute_mask",
                                 "PruningContainer.__init__", "L1Unstructured.apply", "global_unstructured",
                                 "remove", "is_pruned"],
    "torchlite.nn.utils.spectral_norm": ["SpectralNorm.__init__", "SpectralNorm.apply", "spectral_norm",
                                         "remove_spectral_norm"],
    "torchlite.nn.utils.weight_norm": ["WeightNorm.apply", "weight_norm", "remove_weight_norm",
                                       "norm_except_dim"],
    "torchlite.nn.utils.parametrize": ["register_parametrization", "remove_parametrizations", "cached",
                                       "ParametrizationList.__init__"],
    "torchlite.nn.utils.parametrizations": ["weight_norm", "spectral_norm", "orthogonal"],
    "torchlite.nn.utils.clip_grad": ["clip_grad_norm_", "clip_grad_value_", "get_total_norm"],
    "torchlite.nn.utils.fusion": ["fuse_conv_bn_eval", "fuse_linear_bn_weights"],
    "torchlite.nn.utils.convert_parameters": ["parameters_to_vector", "vector_to_parameters"],
    "torchlite.nn.utils.stateless": ["functional_call"],
    "torchlite.nn.utils.init": ["skip_init"],
    "torchlite.nn.functional.aten": ["conv2d", "conv_tbc", "dropout", "batch_norm", "native_layer_norm",
                                     "lstm", "embedding_bag"],
    "torchlite.nn.functional.pooling3d": ["max_pool3d", "avg_pool3d", "adaptive_max_pool3d", "max_unpool3d"],
    "torchlite.nn.functional.recurrent": [],
    "torchlite.nn.functional.sync_batch_norm": ["batch_norm_stats", "batch_norm_gather_stats_with_counts",
                                                "batch_norm_backward_reduce"],
    "torchlite.nn.functional.sparse": ["embedding", "embedding_bag", "one_hot"],
    "torchlite.nn.functional.spatial_transform": ["affine_grid", "grid_sample"],
    "torchlite.nn.functional.convolution3d": ["conv3d", "conv_transpose3d"],
    "torchlite.nn.functional.attention": ["scaled_dot_product_attention", "multi_head_attention_forward"],
    "torchlite.nn.functional.ctc": ["ctc_loss"],
    "torchlite.nn.functional.fractional_pooling": ["fractional_max_pool2d",
                                                   "fractional_max_pool3d_with_indices"],
    "torchlite.nn.attention": ["SDPBackend.__str__", "sdpa_kernel"],
    "torchlite.nn.attention.flex_attention": ["flex_attention", "create_block_mask", "BlockMask.__init__",
                                              "BlockMask.to_string", "and_masks"],
    "torchlite.nn.attention.bias": ["CausalBias.__init__", "causal_upper_left", "causal_lower_right"],
    "torchlite.nn.parallel.distributed": ["DistributedDataParallel.__init__",
                                          "DistributedDataParallel.forward",
                                          "DistributedDataParallel.no_sync", "DistributedDataParallel.join"],
    "torchlite.nn.parallel.data_parallel": ["DataParallel.__init__", "DataParallel.scatter", "data_parallel"],
    "torchlite.nn.parallel.scatter_gather": ["scatter", "scatter_kwargs", "gather"],
    "torchlite.nn.parallel.replicate": ["replicate"],
    "torchlite.nn.parallel.parallel_apply": ["parallel_apply"],
    "torchlite.autograd": ["grad"],
    "torchlite.autograd.graph": [],
    "torchlite.autograd.grad_mode": ["is_grad_enabled", "is_inference_mode_enabled"],
    "torchlite.autograd.function": [],
    "torchlite.autograd.functional": ["vjp", "jvp", "jacobian", "hessian", "Linearization.jvp"],
    "torchlite.autograd.forward_ad": ["make_dual", "unpack_dual", "dual_level.__enter__"],
    "torchlite.autograd.anomaly": ["is_anomaly_enabled", "set_anomaly_enabled"],
    "torchlite.autograd.profiler": ["profile.__init__", "profile.table", "emit_nvtx.__init__"],
    "torchlite.autograd.gradcheck": [],
    "torchlite.autograd.engine": [],
    "torchlite.autograd.variable": ["Variable.__new__"],
    "torchlite.fx.proxy": ["Proxy.__init__", "Proxy.__add__", "Proxy.__getitem__", "Attribute.__init__",
                           "SymInt.__new__", "SymInt.__add__"],
    "torchlite.fx.node": ["Node.__init__", "Node.replace_all_uses_with", "map_arg", "map_aggregate"],
    "torchlite.fx.graph": ["Graph.__init__", "Graph.create_node", "Graph.inserting_before",
                           "Graph.python_code", "PythonCode.__init__"],
    "torchlite.fx.graph_module": ["GraphModule.__init__", "GraphModule.recompile",
                                  "GraphModule.print_readable"],
    "torchlite.fx.interpreter": ["Interpreter.__init__", "Interpreter.run", "Interpreter.call_function",
                                 "Transformer.transform"],
    "torchlite.fx.passes.shape_prop": ["ShapeProp.run_node", "ShapeProp.propagate"],
    "torchlite.distributions.bernoulli": ["Bernoulli.__init__", "Bernoulli.expand", "Bernoulli.log_prob",
                                          "Bernoulli.sample", "Bernoulli.entropy"],
    "torchlite.distributions.beta": ["Beta.__init__", "Beta.expand", "Beta.log_prob", "Beta.rsample",
                                     "Beta.entropy"],
    "torchlite.distributions.binomial": ["Binomial.__init__", "Binomial.expand", "Binomial.log_prob",
                                         "Binomial.sample", "Binomial.entropy"],
    "torchlite.distributions.categorical": ["Categorical.__init__", "Categorical.expand",
                                            "Categorical.log_prob", "Categorical.sample",
                                            "Categorical.entropy"],
    "torchlite.distributions.cauchy": ["Cauchy.__init__", "Cauchy.expand", "Cauchy.log_prob",
                                       "Cauchy.rsample", "Cauchy.cdf"],
    "torchlite.distributions.constraint_registry": ["ConstraintRegistry.__init__",
                                                    "ConstraintRegistry.__call__",
                                                    "ConstraintRegistry.register"],
    "torchlite.distributions.constraints": ["Constraint.check", "independent.__init__", "interval.__init__",
                                            "cat.check", "is_dependent", "MixtureSameFamilyConstraint.check"],
    "torchlite.distributions.continuous_bernoulli": ["ContinuousBernoulli.__init__",
                                                     "ContinuousBernoulli.expand",
                                                     "ContinuousBernoulli.log_prob",
                                                     "ContinuousBernoulli.rsample",
                                                     "ContinuousBernoulli.sample"],
    "torchlite.distributions.dirichlet": ["Dirichlet.__init__", "Dirichlet.expand", "Dirichlet.log_prob",
                                          "Dirichlet.rsample", "Dirichlet.entropy"],
    "torchlite.distributions.distribution": ["Distribution.__init__", "Distribution.expand",
                                             "Distribution.sample", "Distribution.log_prob",
                                             "Distribution.entropy",
                                             "Distribution.set_default_validate_args"],
    "torchlite.distributions.exp_family": ["ExponentialFamily.entropy"],
    "torchlite.distributions.fishersnedecor": ["FisherSnedecor.__init__", "FisherSnedecor.expand",
                                               "FisherSnedecor.log_prob", "FisherSnedecor.rsample"],
    "torchlite.distributions.folded": ["HalfNormal.__init__", "HalfNormal.expand", "HalfNormal.log_prob",
                                       "HalfCauchy.__init__", "HalfCauchy.expand"],
    "torchlite.distributions.gamma": ["Gamma.__init__", "Gamma.expand", "Gamma.log_prob", "Gamma.rsample",
                                      "Chi2.__init__"],
    "torchlite.distributions.generalized_pareto": ["GeneralizedPareto.__init__", "GeneralizedPareto.expand",
                                                   "GeneralizedPareto.log_prob", "GeneralizedPareto.rsample",
                                                   "GeneralizedPareto.cdf"],
    "torchlite.distributions.geometric": ["Geometric.__init__", "Geometric.expand", "Geometric.log_prob",
                                          "Geometric.sample", "Geometric.entropy"],
    "torchlite.distributions.gumbel": ["Gumbel.__init__", "Gumbel.expand", "Gumbel.log_prob",
                                       "Gumbel.entropy"],
    "torchlite.distributions.independent": ["Independent.__init__", "Independent.expand",
                                            "Independent.log_prob", "Independent.rsample",
                                            "Independent.sample"],
    "torchlite.distributions.inverse_gamma": ["InverseGamma.__init__", "InverseGamma.expand",
                                              "InverseGamma.entropy"],
    "torchlite.distributions.kl": ["kl_divergence", "register_kl"],
    "torchlite.distributions.kumaraswamy": ["Kumaraswamy.__init__", "Kumaraswamy.expand",
                                            "Kumaraswamy.entropy"],
    "torchlite.distributions.lkj_cholesky": ["LKJCholesky.__init__", "LKJCholesky.expand",
                                             "LKJCholesky.log_prob", "LKJCholesky.sample"],
    "torchlite.distributions.log_normal": ["LogNormal.__init__", "LogNormal.expand", "LogNormal.entropy"],
    "torchlite.distributions.logistic_normal": ["LogisticNormal.__init__", "LogisticNormal.expand"],
    "torchlite.distributions.lowrank_multivariate_normal": ["LowRankMultivariateNormal.__init__",
                                                            "LowRankMultivariateNormal.expand",
                                                            "LowRankMultivariateNormal.log_prob",
                                                            "LowRankMultivariateNormal.rsample",
                                                            "LowRankMultivariateNormal.entropy"],
    "torchlite.distributions.mixture_same_family": ["MixtureSameFamily.__init__", "MixtureSameFamily.expand",
                                                    "MixtureSameFamily.log_prob", "MixtureSameFamily.sample",
                                                    "MixtureSameFamily.__repr__"],
    "torchlite.distributions.multinomial": ["Multinomial.__init__", "Multinomial.expand",
                                            "Multinomial.log_prob", "Multinomial.sample",
                                            "Multinomial.entropy"],
    "torchlite.distributions.multivariate_normal": ["MultivariateNormal.__init__",
                                                    "MultivariateNormal.expand",
                                                    "MultivariateNormal.log_prob",
                                                    "MultivariateNormal.rsample",
                                                    "MultivariateNormal.entropy"],
    "torchlite.distributions.negative_binomial": ["NegativeBinomial.__init__", "NegativeBinomial.expand",
                                                  "NegativeBinomial.log_prob", "NegativeBinomial.sample"],
    "torchlite.distributions.normal": ["Normal.__init__", "Normal.expand", "Normal.log_prob",
                                       "Normal.rsample", "Normal.sample"],
    "torchlite.distributions.one_hot_categorical": ["OneHotCategorical.__init__", "OneHotCategorical.expand",
                                                    "OneHotCategorical.log_prob", "OneHotCategorical.sample",
                                                    "OneHotCategoricalStraightThrough.__init__"],
    "torchlite.distributions.pareto": ["Pareto.__init__", "Pareto.expand", "Pareto.entropy"],
    "torchlite.distributions.relaxed_bernoulli": ["LogitRelaxedBernoulli.__init__",
                                                  "LogitRelaxedBernoulli.expand",
                                                  "LogitRelaxedBernoulli.log_prob",
                                                  "LogitRelaxedBernoulli.rsample",
                                                  "RelaxedBernoulli.__init__"],
    "torchlite.distributions.relaxed_categorical": ["ExpRelaxedCategorical.__init__",
                                                    "ExpRelaxedCategorical.expand",
                                                    "ExpRelaxedCategorical.log_prob",
                                                    "ExpRelaxedCategorical.rsample",
                                                    "RelaxedOneHotCategorical.__init__"],
    "torchlite.distributions.simple": ["Exponential.__init__", "Exponential.expand", "Exponential.log_prob",
                                       "Exponential.rsample", "Laplace.__init__"],
    "torchlite.distributions.student_t": ["StudentT.__init__", "StudentT.expand", "StudentT.log_prob",
                                          "StudentT.rsample", "StudentT.entropy"],
    "torchlite.distributions.transformed_distribution": ["TransformedDistribution.__init__",
                                                         "TransformedDistribution.expand",
                                                         "TransformedDistribution.log_prob",
                                                         "TransformedDistribution.rsample",
                                                         "TransformedDistribution.sample"],
    "torchlite.distributions.transforms": ["Transform.__init__", "Transform.__call__",
                                           "Transform.log_abs_det_jacobian", "ComposeTransform.__init__",
                                           "AffineTransform.__init__",
                                           "CumulativeDistributionTransform.__init__"],
    "torchlite.distributions.uniform": ["Uniform.__init__", "Uniform.expand", "Uniform.log_prob",
                                        "Uniform.rsample", "Uniform.cdf"],
    "torchlite.distributions.utils": ["lazy_property.__init__", "broadcast_all", "logits_to_probs",
                                      "clamp_probs", "probs_to_logits"],
    "torchlite.distributions.von_mises": ["VonMises.__init__", "VonMises.expand", "VonMises.log_prob",
                                          "VonMises.sample"],
    "torchlite.distributions.weibull": ["Weibull.__init__", "Weibull.expand", "Weibull.entropy"],
    "torchlite.distributions.wishart": ["Wishart.__init__", "Wishart.expand", "Wishart.log_prob",
                                        "Wishart.rsample", "Wishart.entropy"],
    "torchlite.vision": ["get_image_backend", "set_image_backend"],
    "torchlite.vision.datasets.cifar": ["CIFAR10.__init__", "CIFAR100.__init__", "CIFAR10.__getitem__",
                                        "CIFAR10.__len__", "CIFAR10.download"],
    "torchlite.vision.datasets.fakedata": ["FakeData.__init__", "FakeData.__getitem__", "FakeData.__len__"],
    "torchlite.vision.datasets.folder": ["DatasetFolder.__init__", "ImageFolder.__init__",
                                         "DatasetFolder.__getitem__", "DatasetFolder.__len__",
                                         "DatasetFolder.find_classes"],
    "torchlite.vision.datasets.mnist": ["MNIST.__init__", "FashionMNIST.__init__", "KMNIST.__init__",
                                        "EMNIST.__init__", "MNIST.__getitem__"],
    "torchlite.vision.datasets.svhn": ["SVHN.__init__", "SVHN.__getitem__", "SVHN.__len__", "SVHN.download",
                                       "SVHN.extra_repr"],
    "torchlite.vision.datasets.utils": ["calculate_md5", "check_md5", "check_integrity", "download_url",
                                        "extract_archive"],
    "torchlite.vision.datasets.vision": ["VisionDataset.__init__", "StandardTransform.__init__",
                                         "VisionDataset.__getitem__", "VisionDataset.__len__",
                                         "VisionDataset.__repr__"],
    "torchlite.vision.io": ["read_image", "decode_image", "read_file", "write_file", "encode_png"],
    "torchlite.vision.models.densenet": ["DenseNet.__init__", "DenseNet.forward", "densenet121",
                                         "densenet161", "densenet169"],
    "torchlite.vision.models.efficientnet": ["EfficientNet.__init__", "EfficientNet.forward",
                                             "efficientnet_b0", "efficientnet_b1", "efficientnet_b2"],
    "torchlite.vision.models.mobilenet": ["MobileNetV2.__init__", "MobileNetV2.forward",
                                          "MobileNetV3.__init__", "MobileNetV3.forward", "mobilenet_v2"],
    "torchlite.vision.models.resnet": ["ResNet.__init__", "ResNet.forward", "BasicBlock.__init__",
                                       "BasicBlock.forward", "Bottleneck.__init__"],
    "torchlite.vision.models.squeezenet": ["SqueezeNet.__init__", "SqueezeNet.forward", "squeezenet1_0",
                                           "squeezenet1_1"],
    "torchlite.vision.models.vgg": ["VGG.__init__", "VGG.forward", "AlexNet.__init__", "alexnet", "vgg16"],
    "torchlite.vision.models.vision_transformer": ["VisionTransformer.__init__", "VisionTransformer.forward",
                                                   "vit_b_16", "vit_b_32", "vit_l_16"],
    "torchlite.vision.ops": ["RoIAlign.__init__", "box_area", "box_iou", "generalized_box_iou",
                             "box_convert"],
    "torchlite.vision.transforms.autoaugment": ["AutoAugment.__init__", "AutoAugment.forward",
                                                "RandAugment.__init__", "RandAugment.forward",
                                                "TrivialAugmentWide.__init__"],
    "torchlite.vision.transforms.functional": ["to_tensor", "to_pil_image", "resize", "normalize", "affine",
                                               "five_crop", "gaussian_blur"],
    "torchlite.vision.transforms.transforms": ["Compose.__init__", "Resize.__init__", "Resize.forward",
                                               "RandomResizedCrop.get_params", "Normalize.forward",
                                               "RandomErasing.get_params", "ColorJitter.get_params"],
    "torchlite.vision.transforms.v2": ["Identity.forward", "RGB.forward", "ToDtype.__init__",
                                       "ToDtype.forward", "ToImage.forward"],
    "torchlite.vision.transforms.v2.functional": ["grayscale_to_rgb", "to_dtype", "to_image"],
    "torchlite.vision.utils": ["make_grid", "save_image", "draw_bounding_boxes"],
    "torchlite.utils.tensorboard.writer": ["SummaryWriter.__init__", "SummaryWriter.add_scalar",
                                           "SummaryWriter.add_image", "SummaryWriter.add_graph",
                                           "SummaryWriter.add_hparams", "FileWriter.add_event",
                                           "SummaryWriter.__exit__"],
    "torchlite.utils.benchmark.timer": ["Timer.__init__", "Timer.timeit", "Timer.blocked_autorange",
                                        "Timer.adaptive_autorange", "timer"],
    "torchlite.utils.benchmark.compare": ["Compare.__init__", "Compare.__str__", "Compare.colorize",
                                          "Compare.extend_results", "Compare.highlight_warnings"],
}


def _namespace():
    data = importlib.import_module("torchlite.utils.data")
    ns = {name: getattr(typing, name) for name in typing.__all__}
    ns.update((name, getattr(collections.abc, name)) for name in collections.abc.__all__)
    ns.update(Tensor=torchlite.Tensor, dtype=torchlite.dtype, device=torchlite.device,
              Size=torchlite.Size, layout=torchlite.layout, memory_format=torchlite.memory_format,
              Generator=torchlite.Generator, Module=torchlite.nn.Module,
              Optimizer=torchlite.optim.Optimizer, PackedSequence=torchlite.nn.utils.rnn.PackedSequence,
              Dataset=data.Dataset, Sampler=data.Sampler)
    return ns


def _methods(cls, modname):
    """{name: function} of cls's __init__, public and special methods defined in modname (the
    one each name resolves to, along the MRO)."""
    found = {}
    for klass in cls.__mro__:
        for name, attr in vars(klass).items():
            if name in found or (name.startswith("_") and not
                                 (name.startswith("__") and name.endswith("__"))):
                continue
            fn = getattr(attr, "__func__", attr)         # staticmethod, classmethod
            if isinstance(attr, property):
                fn = attr.fget
            if inspect.isfunction(fn):
                # written in that module's source: not another module's, and not made by
                # exec (the methods @dataclass writes have no source file)
                own = fn.__module__ == modname and fn.__code__.co_filename.endswith(".py")
                found[name] = fn if own else None
    return {name: fn for name, fn in found.items() if fn is not None}


def _api(modname):
    """[(qualified name, function)] that the module must annotate."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:       # the public functions and classes written in the module
        names = [n for n, v in vars(mod).items() if (inspect.isfunction(v) or inspect.isclass(v))
                 and v.__module__ == modname and not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            out += [(f"{name}.{m}", fn) for m, fn in sorted(_methods(obj, modname).items())]
        elif inspect.isfunction(obj) and obj.__module__ == modname:   # not re-exported
            out.append((name, obj))
    return mod, out


def _missing(fn):
    sig = inspect.signature(fn)
    bad = [p.name for p in sig.parameters.values()
           if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")
           and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if sig.return_annotation is inspect.Signature.empty:
        bad.append("return")
    return bad


@pytest.mark.parametrize("modname", list(MODULES))
def test_public_api_is_annotated(modname):
    mod, api = _api(modname)
    assert getattr(mod, "annotations", None) is __future__.annotations, \
        f"{modname}: add `from __future__ import annotations`"
    covered = {name for name, _ in api}
    assert set(MODULES[modname]) <= covered, sorted(set(MODULES[modname]) - covered)
    ns = _namespace()
    problems = []
    for name, fn in api:
        bad = _missing(fn)
        if bad:
            problems.append(f"{name}: no annotation on {', '.join(bad)}")
            continue
        try:
            typing.get_type_hints(fn, localns=ns)
        except Exception as e:                          # NameError, TypeError, SyntaxError
            problems.append(f"{name}: annotations do not evaluate: {type(e).__name__}: {e}")
    assert not problems, f"{modname}:\n  " + "\n  ".join(problems)
