"""torchlite's CPU array layer (Cython + OpenMP).

The array interface, which the CUDA backend implements too, is what the Tensor layer uses:

* ``array.Array``: a strided view; ``shape``, ``strides`` (elements), ``offset``, ``dtype``
  (an int code, see torchlite/_dtype.py), ``ndim``, ``numel``, ``device``; views
  ``view``, ``as_strided``, ``permute``, ``transpose``, ``expand``, ``slice``, ``select``,
  ``squeeze``, ``unsqueeze``, ``diagonal``, ``unfold``; ``item``, ``tolist``.
* creation: ``array.empty``, ``array.full``, ``array.fill_``, ``array.from_numpy``,
  ``array.from_flat``.
* ``elementwise``: ``unary``, ``binary``, ``ternary`` (op codes in ``UNARY``, ``BINARY``,
  ``TERNARY``), ``cast``, ``copy_``, ``clone``, ``contiguous``, type promotion.
* ``reduce``, ``matmul``, ``index``, ``random``: reductions, GEMM, indexing and RNG kernels.
"""
