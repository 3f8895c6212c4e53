"""Cross-check with Storm: the same GSPN (no SRN-only features) solved by both tools."""

import pytest

stormpy = pytest.importorskip("stormpy")

from hetsched.srn import mark, solve  # noqa: E402
from hetsched.srn.storm import GangGSPN, gang_gspn, storm_steady_state  # noqa: E402

pytestmark = pytest.mark.storm

NETS = [
    GangGSPN(servers=8, capacity=10, gang_size=3, arrival=1.5, dispatch=(2.0, 1.0), local=(0.5, 1.0)),
    GangGSPN(servers=6, capacity=8, gang_size=2, arrival=2.5, dispatch=(1.0, 3.0), local=(1.0, 0.2), mu=1.3),
    # immediate transitions: Storm builds a Markov automaton and eliminates its vanishing states
    GangGSPN(servers=5, capacity=6, gang_size=2, arrival=2.0, dispatch=(1.5, 1.0), local=(0.7, 1.1),
             immediate_start=True),
]


@pytest.mark.parametrize("g", NETS)
def test_same_chain_as_storm(g):
    """Storm's CTMC (built by Storm, solved exactly) and ours agree to rounding."""
    ref = storm_steady_state(g, solver="dense")
    r = solve(gang_gspn(g), method="direct")
    assert r.space.n_tangible == ref["states"]
    assert (ref["eliminated"] > 0) == g.immediate_start == (r.space.n_vanishing > 0)
    for p, v in ref["mark"].items():
        assert r.expect(mark(p)) == pytest.approx(v, rel=1e-10), p


@pytest.mark.parametrize("g", NETS)
def test_storm_solver_within_its_precision(g):
    """Storm's exact sparse LU (the reference, solver="sparselu": Eigen with exact solving forced) agrees
    to 1e-10; its iterative solvers (its default and Eigen's default GMRES+ILU) stop on a relative-change
    test at 1e-6, and the error measured here is up to about 1e-5 (see docs/srn.md), so 1e-4."""
    r = solve(gang_gspn(g))
    for solver, tol in (("sparselu", 1e-10), ("default", 1e-4), ("eigen", 1e-4)):
        ref = storm_steady_state(g, solver=solver)
        for p, v in ref["mark"].items():
            assert r.expect(mark(p)) == pytest.approx(v, rel=tol), (solver, p)


def test_drn_export_is_read_by_storm(tmp_path):
    """Our CTMC exported as DRN: Storm reads it, its LRA reward matches our expectation."""
    from hetsched.srn import Net
    from hetsched.srn.export import to_drn

    net = Net("mm2k")
    net.places(F=4, W=0, S=2, B=0)
    net.timed("arrive", 2.0, inputs={"F": 1}, outputs={"W": 1})
    net.immediate("start", inputs={"W": 1, "S": 1}, outputs={"B": 1})
    net.timed("done", lambda m: 1.0 * m["B"], inputs={"B": 1}, outputs={"S": 1, "F": 1})
    r = solve(net)
    path = to_drn(r.ctmc, tmp_path / "m.drn", rewards={"busy": mark("B")})
    model = stormpy.build_model_from_drn(str(path))
    assert model.nr_states == r.ctmc.n
    prop = stormpy.parse_properties('R{"busy"}=? [ LRA ]')[0]
    out = stormpy.model_checking(model, prop)
    assert out.get_value(model.initial_states[0]) == pytest.approx(r.expect(mark("B")), rel=1e-6)
