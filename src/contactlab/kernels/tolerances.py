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

#: the position correction (mechanics/rows.py ``position_targets``) restores the rows' cfm sink (a
#: resting contact sinks h cfm c_n a step, ~2.5e-10 m under a 100-box column at h = 0.01, cfm 1e-8):
#: a contact with -SINK_RESTORE slop <= phi' < 0 is moved back to the depth SINK_TARGET slop by a
#: correction that runs when one of them is deeper than SINK_TRIGGER slop, i.e. once in many steps
#: (a column's top then sinks at most about half its levels times SINK_TRIGGER slop). The window is
#: far below a landing's penetration, so a landing pile is corrected as before; the target is below
#: the trigger by the position solve's tolerance and above 0, so a restored contact keeps a bias of
#: 0 (docs/benchmarks-sim.md, sixteenth session). The certified steps' correction is one compiled call
#: (mechanics/sink.py: one factorisation of the sunk rows), cheap enough to run by default
#: (docs/benchmarks-sim.md, seventeenth session); fixed-budget and jointed steps take no window
#: (rows.py position_targets_window). 0: off
SINK_RESTORE = 1e-4
SINK_TRIGGER = 5e-5
SINK_TARGET = 1e-6
#: ... and only in a scene at rest: every velocity component of every body below SINK_QUIET slop / h
#: (1e-4 m/s at slop 1e-4, h = 0.01; the stacks' sink is ~1e-6 m/s), on islands with no gap, never in a
#: correction beyond the slop (a landing pile is corrected as before)
SINK_QUIET = 1e-2
