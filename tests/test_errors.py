"""contactlab.errors: an interrupt raised inside a compiled call surfaces as the interrupt."""
import numpy as np
import pytest


def test_an_interrupt_inside_a_compiled_call_is_raised_as_the_interrupt():
    """A Ctrl-C that fires while a numba call boxes its result surfaces from CPython as SystemError
    with the KeyboardInterrupt as cause; step() and solve() raise it as KeyboardInterrupt (the CLI then
    keeps the partial output and exits 130). Other SystemErrors pass through unchanged."""
    import contactlab as cl
    from contactlab.errors import interrupt_behind
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.solvers import registry

    def interrupted_call(*_):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from k

    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs", controllers=[interrupted_call])
    with pytest.raises(KeyboardInterrupt):
        sim.step()
    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs",
                    controllers=[lambda s: (_ for _ in ()).throw(SystemError("a genuine one"))])
    with pytest.raises(SystemError, match="genuine"):
        sim.step()
    spec = registry.get_solver("lemke")
    import dataclasses
    registry._REGISTRY["lemke"] = dataclasses.replace(spec, func=interrupted_call)
    try:
        with pytest.raises(KeyboardInterrupt):
            cl.solve(cl.LCP(np.eye(2), -np.ones(2)), method="lemke")
    finally:
        registry._REGISTRY["lemke"] = spec
    assert interrupt_behind(SystemError("no cause")) is None

    def boxing_many_objects(*_):
        """The chain seen from the simulator's detection (detect_and_match) under SIGALRM-driven
        interrupts: the interrupt wrapped in 16 SystemErrors, one per object still to box."""
        err = KeyboardInterrupt()
        for _ in range(16):
            try:
                raise err
            except BaseException as inner:
                try:
                    raise SystemError("<function _numba_unpickle> returned a result with an exception set") \
                        from inner
                except SystemError as outer:
                    err = outer
        raise err

    sim = Simulator(make_scene("stack", count=2), "box-friction", "pgs", controllers=[boxing_many_objects])
    with pytest.raises(KeyboardInterrupt):
        sim.step()
