"""helpers.launch.launcher's ctas (a persistent kernel's grid, smaller than what fits at once: a probe's question such as
128 CTAs of 132): refused before any GPU work, with the fix named, for a kernel that is not persistent, for a number
that is not a whole number of the kernel's clusters, and for a non-integer."""
import pytest

from helpers.errors import InputError
from helpers.kernels import rung_entry
from helpers.launch import launcher


@pytest.mark.parametrize("rung,ctas,says", [(8, 128, "not persistent"), (13, 129, "2-CTA clusters"),
                                            (13, 0, "2-CTA clusters"), (13, True, "2-CTA clusters"),
                                            (17, 2.0, "2-CTA clusters")])
def test_launcher_refuses_a_grid_it_cannot_use(rung, ctas, says):
    with pytest.raises(InputError, match=says) as e:
        launcher(rung_entry(rung), None, None, ctas=ctas)
    assert "leave ctas out" in str(e.value)
