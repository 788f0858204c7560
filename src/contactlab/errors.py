"""Errors raised by contactlab. Every one is a ``ValueError`` naming the argument and the fix."""


class ContactlabError(ValueError):
    """Base class of every error contactlab raises on bad input."""


class ProblemError(ContactlabError):
    """A problem's data is malformed: wrong shape, NaN/inf, lo > hi, negative mu, ..."""


class ParamError(ContactlabError):
    """A solver option is unknown or out of range, or a method is used outside its matrix class."""


class SolverNotFound(ContactlabError):
    """``method=`` names no registered solver."""


class ModelError(ContactlabError):
    """A scene, body, joint or contact-model input is malformed."""


class SimulationError(RuntimeError):
    """A time step produced no usable answer (not certified even by the fallback solvers, and its
    residual too large to apply); ``Simulator.run`` stops there and keeps the steps so far."""
