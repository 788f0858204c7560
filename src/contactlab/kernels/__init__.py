"""numba kernels: arrays and scalars in, arrays and integer status codes out; they never raise."""
