"""The one place for numerical tolerances (issue 10: "named, relative tolerances in one module").

Every tolerance here is *relative*: it multiplies a size taken from the problem or the iterate
(max |M_ij|, ||q||_inf, ||M||_max ||z||_inf, a diagonal entry, ...), never 1. So a problem
multiplied by 1e-10 or 1e+8 is treated exactly as the original: the same pivots, the same
certification, the same answer.

Plain module-level floats: numba reads them as compile-time constants.
"""

#: double-precision unit roundoff
EPS = 2.220446049250313e-16

#: default certification target of ``solve()``: the scale-free residual
#: (problems/residual.py ``relative_residuals``) must be at most this (or the method's ``tol``)
CERTIFY = 1e-6

#: the unit of w_i in the certified residual is the size t_i of its own terms |q_i| + sum_j |M_ij z_j|
#: (componentwise backward error), but at least NORMWISE_FLOOR * max|q| (the data's own size, never
#: the size of z): rows whose terms are tiny next to q are judged against 1 % of q, so entries of q
#: that are rounding noise do not fail a right answer, while a huge z cannot excuse a violated row
NORMWISE_FLOOR = 1e-2

#: a matrix is symmetric when max |M - M'| <= SYMMETRY * max |M|
SYMMETRY = 1e-12

#: a symmetric matrix is PSD when lambda_min >= -PSD * max |lambda|
PSD = 1e-10

#: a pivot (Schur complement, Cholesky diagonal, LU pivot) is zero when |pivot| <= PIVOT * (size of
#: its row / column entries); dependent rows of rank-deficient PSD matrices land here
PIVOT = 1e-11

#: pivoting iterates: a value of w = M z + q counts as negative only below
#: -ITERATE * (max|q| + max|M| * max|z|): the rounding error of forming w grows with |z|
ITERATE = 1e-12

#: ppm: a w_i of a row dependent on the non-basic set counts as clearly negative below
#: -DEPENDENT_W * max(|q|, |N M^-1 N_B' z_B|) (outside Theorem 1: reported, never guessed)
DEPENDENT_W = 1e-8

#: Lemke: a pivot column entry counts only above LEMKE_PIVOT * max(1, max |entry|) (on the problem
#: normalised by max|M|, so the same at every scale); lexicographic ties: ratios within
#: LEX_RATIO_TIE (1 + |min|), then each lexicographic column within LEX_COLUMN_TIE (1 + |min|)
LEMKE_PIVOT = 1e-9
LEX_RATIO_TIE = 1e-12
LEX_COLUMN_TIE = 1e-13

#: Gauss-Jordan inverse of Lemke's reduced basis: singular below GJ_PIVOT * max |entry|
GJ_PIVOT = 1e-14

#: ratio-test ties: two step lengths are equal within TIE * (|step| + iterate tolerance)
TIE = 1e-10

#: rank decisions of an SVD / QR / elimination (singular supports of enumerate, range tests)
RANK = 1e-10

#: Farkas certificate y >= 0 of infeasibility of {z >= 0, M z + q >= 0}: accepted when
#: min y >= -FARKAS * max y, max (M'y)_+ <= FARKAS * max|M| * ||y||_1 and
#: q'y <= -FARKAS_MARGIN * max|q| * ||y||_1
FARKAS = 1e-9
FARKAS_MARGIN = 1e-7

#: the position correction (mechanics/kernels.py ``position_targets``): a contact counts as deeper
#: than the slop only by more than SLOP_EXCESS * slop; below that the excess is what the step's
#: solves leave (a 1e-3 relative position solve, a 1e-6 velocity solve), not penetration to remove
SLOP_EXCESS = 1e-2

#: the normal rows' bias (mechanics/rows.py ``normal_bias_kernel``) restores a penetration no deeper
#: than SINK_RESTORE * slop: the depth the rows' cfm leaves at rest (h cfm c_n, ~2.5e-10 m under a
#: 100-box column at h = 0.01, cfm 1e-8), far below a landing's penetration. 0: off (the bias is 0
#: for every penetration within the slop); 1e-4 (delta = 1e-8 m at slop 1e-4) removes the stacks'
#: sink but costs resting contacts Newton steps (docs/benchmarks-sim.md, fifteenth session: drift15b, drift15c)
SINK_RESTORE = 0.0
