"""Contact formulations: each module builds a problem from a snapshot and recovers forces, velocities, modes."""
