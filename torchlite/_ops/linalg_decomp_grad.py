"""Backward formulas of the decompositions and solvers in linalg_decomp.py.

Every formula is written with Tensor ops (the public solvers included), so it is
differentiable again.  The multi-output nodes take None for outputs without a gradient
(_materialize = False), so a loss of the singular values alone never touches the
1 / (s_j^2 - s_i^2) terms that blow up for repeated values.

Known limits (as documented in the report): det / slogdet gradients go through A^{-1} (not
defined for singular A, where torch uses an SVD); svd and eigh gradients assume distinct
values (torch raises for gauge-dependent losses, these do not check); lu_factor / lu / lu_solve
record nodes that raise 'not implemented'."""
from ..autograd.graph import Node, record, sum_to


def _wants(node, i):
    return node.next_functions[i][0] is not None


def _sym(X):
    return 0.5 * (X + X.mT)


def _eye(n, like):
    from .creation import eye
    return eye(n, dtype=like.dtype, device=like.device)


def _ld():
    from . import linalg_decomp
    return linalg_decomp


# ---- inverse and solvers ---------------------------------------------------------------------
class LinalgInvExBackward0(Node):
    def backward(self, g, *rest):
        X = self.saved("inverse")
        if g is None:
            return (None,)
        Xt = X.mT
        return (-(Xt @ g @ Xt),)


def record_inv(A, X):
    node = LinalgInvExBackward0()
    node._materialize = False
    node.save_output(inverse=X)
    record(node, (A,), X)


class LinalgSolveExBackward0(Node):
    def backward(self, g, *rest):
        A, X = self.saved("A"), self.saved("result")
        if g is None:
            return None, None
        left, vec, ashape, bshape = self.meta
        gm = g.unsqueeze(-1) if vec else g
        Xm = X.unsqueeze(-1) if vec else X
        solve = _ld().solve
        if left:                   # X = A^-1 B: gB = A^-T g, gA = -gB X^T
            gB = solve(A.mT, gm)
            gA = -(gB @ Xm.mT)
        else:                      # X = B A^-1: gB = g A^-T, gA = -X^T gB
            gB = solve(A.mT, gm, left=False)
            gA = -(Xm.mT @ gB)
        gB = gB.squeeze(-1) if vec else gB
        return (sum_to(gA, ashape) if _wants(self, 0) else None,
                sum_to(gB, bshape) if _wants(self, 1) else None)


def record_solve(A, B, X, left, vec):
    node = LinalgSolveExBackward0()
    node._materialize = False
    node.meta = (left, vec, tuple(A.shape), tuple(B.shape))
    node.save(A=A)
    node.save_output(result=X)
    record(node, (A, B), X)


class LinalgSolveTriangularBackward0(Node):
    def backward(self, g):
        A, X = self.saved("A"), self.saved("result")
        upper, left, unit, ashape, bshape = self.meta
        st = _ld().solve_triangular
        if left:
            gB = st(A.mT, g, upper=not upper, unitriangular=unit)
            gA = -(gB @ X.mT)
        else:
            gB = st(A.mT, g, upper=not upper, left=False, unitriangular=unit)
            gA = -(X.mT @ gB)
        off = 1 if (unit and upper) else 0
        gA = gA.triu(off) if upper else gA.tril(-1 if unit else 0)
        return (sum_to(gA, ashape) if _wants(self, 0) else None,
                sum_to(gB, bshape) if _wants(self, 1) else None)


def record_solve_triangular(A, B, X, upper, left, unit):
    node = LinalgSolveTriangularBackward0()
    node.meta = (upper, left, unit, tuple(A.shape), tuple(B.shape))
    node.save(A=A)
    node.save_output(result=X)
    record(node, (A, B), X)


# ---- LU ------------------------------------------------------------------------------------------
def lu_grad(P, L, U, gL, gU):
    """The gradient of A = P L U (L: m x k unit lower-triangular, U: k x n upper, k = min(m,
    n)) from those of L and U (None: zero).  With C = L^-1 P^T dA U^-1 on the square part,
    dL = L tril(C, -1) and dU = triu(C) U, so <gL, dL> + <gU, dU> = <M, C> for the M below;
    the wide (m < n) and tall (m > n) cases carry the extra block of U or L through it.
    Formulas derived here; checked by gradcheck (tests/test_autograd_linalg_decomp.py)."""
    st = _ld().solve_triangular
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = gL if gL is not None else L.new_zeros(L.shape)
    gU = gU if gU is not None else U.new_zeros(U.shape)
    if m >= n:                      # square or tall: L = [L1; L2], U is k x k
        L1, gL1 = L[..., :k, :], gL[..., :k, :]
        T = gU @ U.mT
        if m > n:
            T = T - L[..., k:, :].mT @ gL[..., k:, :]
        M = (L1.mT @ gL1).tril(-1) + T.triu()
        top = st(L1.mT, st(U.mT, M, upper=False, left=False), upper=True, unitriangular=True)
        if m > n:                   # the rows below: gL2 U^-T
            from .joining import cat
            top = cat([top, st(U.mT, gL[..., k:, :], upper=False, left=False)], -2)
        return P @ top
    # wide: U = [U1 U2], U1 k x k
    U1, gU1, U2, gU2 = U[..., :, :k], gU[..., :, :k], U[..., :, k:], gU[..., :, k:]
    M = (L.mT @ gL - gU2 @ U2.mT).tril(-1) + (gU1 @ U1.mT).triu()
    left = st(L.mT, st(U1.mT, M, upper=False, left=False), upper=True, unitriangular=True)
    right = st(L.mT, gU2, upper=True, unitriangular=True)
    from .joining import cat
    return P @ cat([left, right], -1)


class LinalgLuBackward0(Node):
    """linalg.lu: outputs (P, L, U); P is piecewise constant."""

    def backward(self, gP, gL, gU):
        if gL is None and gU is None:
            return (None,)
        return (lu_grad(self.P, self.saved("L"), self.saved("U"), gL, gU),)


def record_lu(A, P, L, U):
    node = LinalgLuBackward0()
    node._materialize = False
    node.P = P
    record(node, (A,), (None, L, U))
    node.save_output(L=L, U=U)


class LinalgLuFactorExBackward0(Node):
    """linalg.lu_factor(_ex): outputs (LU, pivots, info); LU packs L below its diagonal and U
    on and above it, so its gradient splits the same way.  L and U are taken from the saved
    LU with Tensor ops, so a double backward sees them depend on A."""

    def backward(self, gLU, *rest):
        if gLU is None:
            return (None,)
        LU = self.saved("LU")
        m, n = LU.shape[-2], LU.shape[-1]
        k = min(m, n)
        eye = LU.new_zeros((m, k))
        eye.diagonal().fill_(1)
        L = LU[..., :, :k].tril(-1) + eye
        U = LU[..., :k, :].triu()
        return (lu_grad(self.P, L, U, gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu()),)


def record_lu_factor(A, P, outputs):
    node = LinalgLuFactorExBackward0()
    node._materialize = False
    node.P = P
    record(node, (A,), outputs)       # first: the saved output needs its output number
    node.save_output(LU=outputs[0])


# ---- determinants ----------------------------------------------------------------------------
class LinalgDetBackward0(Node):
    def backward(self, g):
        # d det(A) = det(A) A^-T.  A singular matrix (a batch holding one) has no inverse: its
        # det is 0, and its gradient is taken as 0 * pinv(A)^T, the zeros PyTorch gives there
        # (the pseudo-inverse is the inverse for the invertible matrices of the batch)
        A, d = self.saved("A"), self.saved("result")
        try:
            A_inv = _ld().inv(A)
        except _ld().LinAlgError:
            A_inv = _ld().pinv(A)
        return ((g * d).unsqueeze(-1).unsqueeze(-1) * A_inv.mT,)


def record_det(A, d):
    node = LinalgDetBackward0()
    node.save(A=A)
    node.save_output(result=d)
    return record(node, (A,), d)


class LinalgSlogdetBackward0(Node):
    def backward(self, gsign, glad):
        if glad is None:
            return (None,)
        A = self.saved("A")
        return (glad.unsqueeze(-1).unsqueeze(-1) * _ld().inv(A).mT,)


def record_slogdet(A, sign, lad):
    node = LinalgSlogdetBackward0()
    node._materialize = False
    node.save(A=A)
    record(node, (A,), (sign, lad))


# ---- Cholesky ---------------------------------------------------------------------------------
class LinalgCholeskyExBackward0(Node):
    def backward(self, g, *rest):
        if g is None:
            return (None,)
        L = self.saved("L")
        if self.upper:            # U = L^T
            L, g = L.mT, g.mT
        # A = L L^T: gA = L^-T Phi(L^T gL) L^-1 (Phi: lower triangle, halved diagonal),
        # symmetrised (A is symmetric)
        P = (L.mT @ g.tril()).tril()
        P = P - 0.5 * P.diagonal(dim1=-2, dim2=-1).diag_embed()
        st = _ld().solve_triangular
        gA = st(L.mT, st(L, P, upper=False, left=False), upper=True)
        return (_sym(gA),)


def record_cholesky(A, L, upper):
    node = LinalgCholeskyExBackward0()
    node._materialize = False
    node.upper = upper
    node.save_output(L=L)
    record(node, (A,), L)


# ---- QR --------------------------------------------------------------------------------------
class LinalgQrBackward0(Node):
    def backward(self, gQ, gR):
        mode = self.mode
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        Q, R = self.saved("Q"), self.saved("R")
        m, n = Q.shape[-2], R.shape[-1]
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        gQ = gQ if gQ is not None else Q.new_zeros(Q.shape)
        if m >= n:
            return (_qr_grad(Q, R, gQ, gR),)
        # wide: A = [X Y] with X = Q R1 (square) and Y = Q R2, so R2 = Q^T Y: Y's gradient is
        # Q gR2, and R2's dependence on Q adds Y gR2^T to X's gQ
        from .joining import cat
        R1, R2 = R[..., :, :m], R[..., :, m:]
        if gR is None:
            return (cat([_qr_grad(Q, R1, gQ, None), Q.new_zeros(R2.shape)], -1),)
        gR2 = gR[..., :, m:]
        gX = _qr_grad(Q, R1, gQ + (Q @ R2) @ gR2.mT, gR[..., :, :m])
        return (cat([gX, Q @ gR2], -1),)


def _qr_grad(Q, R, gQ, gR):
    """The gradient of A = Q R for m >= n (R square, n x n): M = R gR^T - gQ^T Q,
    gA = (gQ + Q copyltu(M)) R^-T."""
    M = -(gQ.mT @ Q)
    if gR is not None:
        M = M + R @ gR.mT
    low = M.tril(-1)
    M = low + low.mT + M.diagonal(dim1=-2, dim2=-1).diag_embed()
    return _ld().solve_triangular(R.mT, gQ + Q @ M, upper=False, left=False)


def record_qr(A, Q, R, mode):
    node = LinalgQrBackward0()
    node._materialize = False
    node.mode = mode
    record(node, (A,), (Q, R))        # first: the saved outputs need their output numbers
    node.save_output(Q=Q, R=R)


# ---- eigh --------------------------------------------------------------------------------------
class LinalgEighBackward0(Node):
    def backward(self, gw, gV):
        w, V = self.saved("eigenvalues"), self.saved("eigenvectors")
        if gV is None:
            if gw is None:
                return (None,)
            return ((V * gw.unsqueeze(-2)) @ V.mT,)
        # gA = V (diag(gw) + skew(V^T gV) / (w_j - w_i)) V^T, symmetric
        E = w.unsqueeze(-2) - w.unsqueeze(-1)
        n = w.shape[-1]
        E = E + _eye(n, w)               # diagonal: any nonzero (masked below)
        VtgV = V.mT @ gV
        inner = (0.5 * (VtgV - VtgV.mT) / E) * (1 - _eye(n, w))
        if gw is not None:
            inner = inner + gw.diag_embed()
        return (V @ inner @ V.mT,)


def record_eigh(A, w, V, UPLO):
    node = LinalgEighBackward0()
    node._materialize = False
    record(node, (A,), (w, V))
    node.save_output(eigenvalues=w, eigenvectors=V)


# ---- general eigenproblem ---------------------------------------------------------------------
class LinalgEigBackward0(Node):
    """PyTorch's formula: with E_ij = conj(L_j) - conj(L_i),
    gA = V^-H (diag(gL) + offdiag(V^H gV - V^H V Re(diag(V^H gV))) / E) V^H, taken real for a
    real input.  The eigenvectors are fixed only up to a phase each: a loss that depends on it
    (a diagonal of V^H gV that is not real) has no gradient, and raises as PyTorch does."""

    def backward(self, gL, gV=None):
        from .linalg_decomp import solve
        L, V = self.saved("eigenvalues"), self.saved("eigenvectors")
        n = L.shape[-1]
        eye = _eye(n, L)
        Vh = V.mH
        inner = gL.diag_embed() if gL is not None else None
        if gV is not None:
            VhgV = Vh @ gV
            d = VhgV.diagonal(0, -2, -1)
            if bool((d.imag.abs() > 1e-6 * (1 + d.abs())).any()):
                raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up "
                                   "to multiplication by e^{i phi}. The specified loss function depends on this "
                                   "quantity, so it is ill-defined.")
            VhgV = VhgV - Vh @ (V * d.real.unsqueeze(-2).to(V.dtype))
            Lc = L.conj()
            E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye
            off = (VhgV / E) * (1 - eye)
            inner = off if inner is None else inner + off
        if inner is None:
            return (None,)
        gA = solve(Vh, inner @ Vh)
        return (gA if self.complex_input else gA.real,)


def record_eig(A, L, V, outputs):
    node = LinalgEigBackward0()
    node._materialize = False
    node.complex_input = A.is_complex()
    record(node, (A,), outputs)
    node.save_output(eigenvalues=L, eigenvectors=V)


# ---- SVD --------------------------------------------------------------------------------------
class LinalgSvdBackward0(Node):
    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved("U"), self.saved("S"), self.saved("Vh")
        k = S.shape[-1]
        if self.full:
            U, Vh = U[..., :k], Vh[..., :k, :]
            gU = gU[..., :k] if gU is not None else None
            gVh = gVh[..., :k, :] if gVh is not None else None
        if gU is None and gVh is None:
            if gS is None:
                return (None,)
            return ((U * gS.unsqueeze(-2)) @ Vh,)
        m, n = U.shape[-2], Vh.shape[-1]
        V = Vh.mT
        S2 = S * S
        off = 1 - _eye(k, S)
        F = off / (S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S))   # 1/(s_j^2 - s_i^2)
        inner = gS.diag_embed() if gS is not None else None
        Sr = S.unsqueeze(-2)           # scales columns
        extra = None
        if gU is not None:
            UtgU = U.mT @ gU
            J = (F * (UtgU - UtgU.mT)) * Sr
            inner = J if inner is None else inner + J
            if m > k:
                extra = ((gU - U @ UtgU) / Sr) @ Vh
        if gVh is not None:
            gV = gVh.mT
            VtgV = V.mT @ gV
            K = S.unsqueeze(-1) * (F * (VtgV - VtgV.mT))
            inner = K if inner is None else inner + K
            if n > k:
                e2 = U @ ((gV - V @ VtgV) / Sr).mT
                extra = e2 if extra is None else extra + e2
        gA = U @ inner @ Vh
        return (gA if extra is None else gA + extra,)


def record_svd(A, U, S, Vh, full):
    node = LinalgSvdBackward0()
    node._materialize = False
    node.full = full
    record(node, (A,), (U, S, Vh))
    node.save_output(U=U, S=S, Vh=Vh)


# ---- pinv --------------------------------------------------------------------------------------
class LinalgPinvBackward0(Node):
    def backward(self, g):
        # X = A^+: gA = -X^T g X^T + (I - A X) g^T X X^T + X^T X g^T (I - X A)
        A, X = self.saved("A"), self.saved("result")
        Xt = X.mT
        gt = g.mT
        t1 = -(Xt @ g @ Xt)
        t2 = (gt - A @ (X @ gt)) @ (X @ Xt)
        t3 = (Xt @ X) @ (gt - (gt @ X) @ A)
        return (t1 + t2 + t3,)


def record_pinv(A, P):
    node = LinalgPinvBackward0()
    node.save(A=A)
    node.save_output(result=P)
    record(node, (A,), P)


# ---- cholesky_solve ----------------------------------------------------------------------------
class CholeskySolveBackward0(Node):
    """X = cholesky_solve(B, L): gB = cholesky_solve(g, L); with C = gB X^T + X gB^T,
    gL = -C L (-L C when upper).  As PyTorch's, gL is this whole matrix, though the forward
    reads only L's triangle."""

    def backward(self, g):
        L, X = self.saved("input2"), self.saved("result")
        gB = _ld().cholesky_solve(g, L, self.upper)
        common = gB @ X.mT
        common = common + common.mT
        gL = -(L @ common) if self.upper else -(common @ L)
        return sum_to(gB, self.shapes[0]), sum_to(gL, self.shapes[1])


def record_cholesky_solve(B, L, X, upper):
    node = CholeskySolveBackward0()
    node.upper = upper
    node.shapes = (tuple(B.shape), tuple(L.shape))
    node.save(input2=L)
    node.save_output(result=X)
    record(node, (B, L), X)


# ---- matrix_exp -------------------------------------------------------------------------------
class LinalgMatrixExpBackward0(Node):
    def backward(self, g):
        # d/dA <g, exp(A)> = exp([[A^T, g], [0, A^T]])[:n, n:]
        from .joining import cat
        A = self.saved("A")
        n = A.shape[-1]
        At = A.mT
        top = cat([At, g], -1)
        bottom = cat([g.new_zeros(g.shape), At], -1)
        E = _ld().matrix_exp(cat([top, bottom], -2))
        return (E[..., :n, n:],)


def record_matrix_exp(A, E):
    node = LinalgMatrixExpBackward0()
    node.save(A=A)
    record(node, (A,), E)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# The differentials of the decompositions (each the solution of the linear equations the
# backward's formula is the adjoint of).  Every node here but eig's is recorded for real
# matrices only (complex inv/solve/eigvalsh/svdvals go through the real embedding, whose ops
# have their own rules); eig's rule holds for a complex input too.  Inputs the backward
# symmetrises (cholesky's, eigh's: a symmetric matrix read from one triangle) have their
# tangent symmetrised the same way, so J t agrees with the backward (<J t, g> = <t, J^T g>)
# and, for a symmetric tangent, with PyTorch's JVP.  The eigenvector and singular-vector
# tangents assume distinct values, as the backward does.
def _complex_tangent(t):
    return any(x is not None and x.dtype.is_complex for x in t)


def _off_diagonal_inverse(E, like):
    """1 / E off the diagonal, 0 on it (E's diagonal is not read)."""
    eye = _eye(E.shape[-1], like)
    return (1 - eye) / (E + eye)


def _inv_jvp(node, inputs, t, meta):
    X = node.saved("inverse")
    return [-(X @ t[0] @ X)]


def _solve_jvp(node, inputs, t, meta):
    """X = A^-1 B: A^-1 (t_B - t_A X); X = B A^-1: (t_B - X t_A) A^-1."""
    left, vec, _, _ = node.meta
    if vec and not left:
        return None
    A, X = node.saved("A"), node.saved("result")
    Xm = X.unsqueeze(-1) if vec else X
    rhs = None
    if t[1] is not None:
        rhs = t[1].unsqueeze(-1) if vec else t[1]
    if t[0] is not None:
        term = -(t[0] @ Xm) if left else -(Xm @ t[0])
        rhs = term if rhs is None else rhs + term
    dX = _ld().solve(A, rhs.expand(Xm.shape), left=left)
    return [dX.squeeze(-1) if vec else dX]


def _solve_triangular_jvp(node, inputs, t, meta):
    """As solve's, with t_A cut to the triangle the forward reads."""
    upper, left, unit, _, _ = node.meta
    A, X = node.saved("A"), node.saved("result")
    rhs = t[1]
    if t[0] is not None:
        tA = t[0].triu(1 if unit else 0) if upper else t[0].tril(-1 if unit else 0)
        term = -(tA @ X) if left else -(X @ tA)
        rhs = term if rhs is None else rhs + term
    return [_ld().solve_triangular(A, rhs.expand(X.shape), upper=upper, left=left, unitriangular=unit)]


def _cholesky_solve_jvp(node, inputs, t, meta):
    """X = M^-1 B with M = L L^T (U^T U): M^-1 (t_B - t_M X), t_M = t_L L^T + L t_L^T; the
    whole t_L, as the backward's gradient is the whole matrix."""
    L, X = node.saved("input2"), node.saved("result")
    rhs = t[0]
    if t[1] is not None:
        tK = t[1].mT @ L if node.upper else t[1] @ L.mT
        term = -((tK + tK.mT) @ X)
        rhs = term if rhs is None else rhs + term
    return [_ld().cholesky_solve(rhs.expand(X.shape), L, node.upper)]


def _adjugate_trace(A, T):
    """tr(adj(A) T), exact for singular A too: A = U S V^T gives adj(A) = det(U) det(V)
    V adj(S) U^T, adj(S) = diag(prod of the other singular values)."""
    from .joining import cat
    U, S, Vh = _ld().linalg_svd(A, full_matrices=False)
    ones = S.new_ones(tuple(S.shape[:-1]) + (1,))
    before = cat([ones, S[..., :-1]], -1).cumprod(-1)
    after = cat([S[..., 1:], ones], -1).flip(-1).cumprod(-1).flip(-1)
    sign = _ld().det(U) * _ld().det(Vh)
    diag = (U.mT @ T @ Vh.mT).diagonal(dim1=-2, dim2=-1)
    return sign * (before * after * diag).sum(-1)


def _det_jvp(node, inputs, t, meta):
    """det(A) tr(A^-1 t); through the adjugate (an SVD) when a determinant is 0."""
    A, d = node.saved("A"), node.saved("result")
    if bool((d == 0).any()):
        return [_adjugate_trace(A, t[0])]
    return [d * _ld().solve(A, t[0]).diagonal(dim1=-2, dim2=-1).sum(-1)]


def _slogdet_jvp(node, inputs, t, meta):
    """sign: piecewise constant (zero tangent); log|det|: tr(A^-1 t).  None (the double
    backward) for a singular matrix, where log|det| is -inf."""
    from .creation import zeros
    A = node.saved("A")
    try:
        lad = _ld().solve(A, t[0]).diagonal(dim1=-2, dim2=-1).sum(-1)
    except _ld().LinAlgError:
        return None
    sign = zeros(meta[0][0], dtype=meta[0][1], device=meta[0][2]) if meta[0] is not None else None
    return [sign, lad]


def _cholesky_jvp(node, inputs, t, meta):
    """A = L L^T: t_L = L Phi(L^-1 t_A L^-T), Phi the lower triangle with its diagonal
    halved (the inverse of X -> X + X^T on lower-triangular X)."""
    L = node.saved("L")
    if node.upper:
        L = L.mT
    st = _ld().solve_triangular
    M = st(L, st(L.mT, _sym(t[0]), upper=True, left=False), upper=False)
    dL = L @ (M.tril() - 0.5 * M.diagonal(dim1=-2, dim2=-1).diag_embed())
    return [dL.mT if node.upper else dL] + [None] * (len(meta) - 1)


def _matrix_exp_jvp(node, inputs, t, meta):
    """The top-right block of exp([[A, t], [0, A]])."""
    from .joining import cat
    A = node.saved("A")
    n = A.shape[-1]
    top = cat([A, t[0]], -1)
    bottom = cat([t[0].new_zeros(tuple(t[0].shape)), A], -1)
    return [_ld().matrix_exp(cat([top, bottom], -2))[..., :n, n:]]


def _pinv_jvp(node, inputs, t, meta):
    """X = A^+ (rank constant near A): -X t X + X X^T t^T (I - A X) + (I - X A) t^T X^T X."""
    A, X = node.saved("A"), node.saved("result")
    dA, dAt = t[0], t[0].mT
    Xt = X.mT
    return [-(X @ dA @ X) + (X @ Xt) @ (dAt - (dAt @ A) @ X) + (dAt - (X @ A) @ dAt) @ (Xt @ X)]


def _qr_square(Q, R, dA):
    """dQ, dR of A = Q R with R square (m >= n): B = Q^T dA R^-1 = Q^T dQ + dR R^-1, the
    first skew, the second upper triangular."""
    AR = _ld().solve_triangular(R, dA, upper=True, left=False)        # dA R^-1
    B = Q.mT @ AR
    low = B.tril(-1)
    upper_part = B.triu() + low.mT                                    # dR R^-1 = B - (low - low^T)
    return AR - Q @ upper_part, upper_part @ R


def _qr_jvp(node, inputs, t, meta):
    if node.mode == "r":
        return None                                # Q not kept: the double backward raises
    Q, R = node.saved("Q"), node.saved("R")
    m, n = Q.shape[-2], R.shape[-1]
    if node.mode == "complete" and m > n:
        return None
    if m >= n:
        return list(_qr_square(Q, R, t[0]))
    # wide: A = [X Y], X = Q R1, Y = Q R2 (R2 = Q^T Y)
    from .joining import cat
    R1, R2 = R[..., :, :m], R[..., :, m:]
    dQ, dR1 = _qr_square(Q, R1, t[0][..., :, :m])
    dR2 = dQ.mT @ (Q @ R2) + Q.mT @ t[0][..., :, m:]
    return [dQ, cat([dR1, dR2], -1)]


def _eigh_jvp(node, inputs, t, meta):
    """With M = V^T sym(t) V: t_w = diag(M), t_V = V (F o M), F_ij = 1 / (w_j - w_i) off the
    diagonal, 0 on it."""
    w, V = node.saved("eigenvalues"), node.saved("eigenvectors")
    M = V.mT @ _sym(t[0]) @ V
    dw = M.diagonal(dim1=-2, dim2=-1)
    if meta[1] is None:
        return [dw, None]
    F = _off_diagonal_inverse(w.unsqueeze(-2) - w.unsqueeze(-1), w)
    return [dw, V @ (F * M)]


def _svd_jvp(node, inputs, t, meta):
    """With P = U^T t V (k x k): t_S = diag(P); U^T t_U = F o (P S + S P^T), V^T t_V =
    F o (S P + P^T S), F_ij = 1 / (s_j^2 - s_i^2) off the diagonal; the parts outside the
    singular subspaces (m > k, n > k): (I - U U^T) t V S^-1 and (I - V V^T) t^T U S^-1.
    full_matrices with m != n: the extra vectors are not determined (None: the double
    backward)."""
    U, S, Vh = node.saved("U"), node.saved("S"), node.saved("Vh")
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if node.full and m != n:
        return None
    dA, V = t[0], Vh.mT
    dAV = dA @ V
    P = U.mT @ dAV
    dS = P.diagonal(dim1=-2, dim2=-1)
    S2 = S * S
    F = _off_diagonal_inverse(S2.unsqueeze(-2) - S2.unsqueeze(-1), S)
    PS = P * S.unsqueeze(-2)
    SP = S.unsqueeze(-1) * P
    dU = U @ (F * (PS + PS.mT))
    dV = V @ (F * (SP + SP.mT))
    if m > k:
        dU = dU + (dAV - U @ P) / S.unsqueeze(-2)
    if n > k:
        dAtU = dA.mT @ U
        dV = dV + (dAtU - V @ P.mT) / S.unsqueeze(-2)
    return [dU, dS, dV.mT]


def _eig_jvp(node, inputs, t, meta):
    """PyTorch's: with P = V^-1 t V, t_L = diag(P), t_V = V (P / E off the diagonal,
    E_ij = L_j - L_i), less V Re(diag(V^H t_V)) so the columns keep unit norm.  Real-linear
    in t, for a complex input too."""
    L, V = node.saved("eigenvalues"), node.saved("eigenvectors")
    dA = t[0] if t[0].dtype == V.dtype else t[0].to(V.dtype)
    P = _ld().solve(V, dA @ V)
    dL = P.diagonal(dim1=-2, dim2=-1)
    if len(meta) < 2 or meta[1] is None:
        return [dL] + [None] * (len(meta) - 1)
    n = L.shape[-1]
    eye = _eye(n, L)
    dV = V @ (P * (1 - eye) / (L.unsqueeze(-2) - L.unsqueeze(-1) + eye))
    dV = dV - V * (V.mH @ dV).diagonal(dim1=-2, dim2=-1).real.unsqueeze(-2).to(V.dtype)
    return [dL, dV]


def _lu_tangents(P, L, U, dA):
    """dL, dU of A = P L U (L unit lower m x k, U upper k x n): on the square part
    C = L^-1 P^T dA U^-1, dL = L tril(C, -1), dU = triu(C) U; a tall A's extra rows of L and a
    wide A's extra columns of U follow from the rest of P^T dA = dL U + L dU."""
    from .joining import cat
    st = _ld().solve_triangular
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    B = P.mT @ dA
    if m >= n:
        L1 = L[..., :k, :]
        C = st(L1, st(U, B[..., :k, :], upper=True, left=False), upper=False, unitriangular=True)
        dL, dU = L1 @ C.tril(-1), C.triu() @ U
        if m > n:
            dL2 = st(U, B[..., k:, :] - L[..., k:, :] @ dU, upper=True, left=False)
            dL = cat([dL, dL2], -2)
        return dL, dU
    U1, U2 = U[..., :, :k], U[..., :, k:]
    C = st(L, st(U1, B[..., :, :k], upper=True, left=False), upper=False, unitriangular=True)
    dL, dU1 = L @ C.tril(-1), C.triu() @ U1
    dU2 = st(L, B[..., :, k:] - dL @ U2, upper=False, unitriangular=True)
    return dL, cat([dU1, dU2], -1)


def _lu_jvp(node, inputs, t, meta):
    dL, dU = _lu_tangents(node.P, node.saved("L"), node.saved("U"), t[0])
    return [None, dL, dU]


def _lu_factor_jvp(node, inputs, t, meta):
    """LU packs L's strict lower part and U: so does its tangent (dL has a zero diagonal)."""
    from .joining import cat
    LU = node.saved("LU")
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    eye = LU.new_zeros((m, k))
    eye.diagonal().fill_(1)
    dL, dU = _lu_tangents(node.P, LU[..., :, :k].tril(-1) + eye, LU[..., :k, :].triu(), t[0])
    if m > n:
        dU = cat([dU, dU.new_zeros(tuple(dU.shape[:-2]) + (m - n, n))], -2)
    elif m < n:
        dL = cat([dL, dL.new_zeros(tuple(dL.shape[:-2]) + (m, n - m))], -1)
    return [dL + dU] + [None] * (len(meta) - 1)


def _real_only(rule):
    """The rule for real tangents; None (the double backward) for complex ones."""
    def real_rule(node, inputs, t, meta):
        return None if _complex_tangent(t) else rule(node, inputs, t, meta)
    return real_rule


JVP = {
    LinalgInvExBackward0: _real_only(_inv_jvp),
    LinalgSolveExBackward0: _real_only(_solve_jvp),
    LinalgSolveTriangularBackward0: _real_only(_solve_triangular_jvp),
    CholeskySolveBackward0: _real_only(_cholesky_solve_jvp),
    LinalgDetBackward0: _real_only(_det_jvp),
    LinalgSlogdetBackward0: _real_only(_slogdet_jvp),
    LinalgCholeskyExBackward0: _real_only(_cholesky_jvp),
    LinalgMatrixExpBackward0: _real_only(_matrix_exp_jvp),
    LinalgPinvBackward0: _real_only(_pinv_jvp),
    LinalgQrBackward0: _real_only(_qr_jvp),
    LinalgEighBackward0: _real_only(_eigh_jvp),
    LinalgSvdBackward0: _real_only(_svd_jvp),
    LinalgEigBackward0: _eig_jvp,
    LinalgLuBackward0: _real_only(_lu_jvp),
    LinalgLuFactorExBackward0: _real_only(_lu_factor_jvp),
}
