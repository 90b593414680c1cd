"""A drift measurement is kept by its inputs' content (grpo_lab.sims.doctor.drift._inputs_key): equal content, equal
key, in this process or another."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.doctor import drift


def test_an_array_of_objects_is_keyed_by_its_items_not_their_addresses():
    """The shares' row kinds are an array of str: two equal arrays of distinct str objects have one key, and
    arrays that differ in one item have two (their bytes are the objects' addresses, which differ between processes
    and may be reused for another object within one)."""
    built = np.array(["".join(["tri", "nomial"]), "".join(["all", "_pass"])], dtype=object)
    plain = np.array(["trinomial", "all_pass"], dtype=object)
    assert built[0] is not plain[0] and built.tobytes() != plain.tobytes()
    assert drift._content(built) == drift._content(plain)
    assert drift._digest(drift._content({"kind": built})) == drift._digest(drift._content({"kind": plain}))
    other = np.array(["trinomial", "all_fail"], dtype=object)
    assert drift._content(other) != drift._content(plain)
    assert drift._content(plain.reshape(2, 1)) != drift._content(plain)  # the shape is part of it
