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


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt a ``SystemError`` stands for, or None.

    A Ctrl-C (or the CLI's SIGTERM handler) that fires while a compiled numba call boxes the arrays
    it returns sets the interrupt inside that call, and CPython reports the call as a SystemError
    ('returned a result with an exception set') with the KeyboardInterrupt as its cause. ``solve()``
    and ``Simulator.step()`` raise that interrupt as itself, so partial results are kept as for any
    Ctrl-C. The chain can be long: a compiled call that boxes many objects wraps the interrupt once
    per object still to box (16 SystemErrors seen from the simulator's detection), so it is walked
    to its end (each exception once)."""
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def raise_interrupt_behind(exc: SystemError):
    """Raise the KeyboardInterrupt behind ``exc`` (:func:`interrupt_behind`), else ``exc`` itself."""
    interrupt = interrupt_behind(exc)
    if interrupt is None:
        raise exc
    raise interrupt from None
