"""Time-stepping simulation with any contact model and solver method, and its HDF5 recorder."""
from .recorder import read_trajectory, write_trajectory
from .simulator import Simulator, StepRecord, Trajectory, kinetic_energy, potential_energy

__all__ = ["Simulator", "StepRecord", "Trajectory", "kinetic_energy", "potential_energy",
           "write_trajectory", "read_trajectory"]
