"""plain(): Ansible's templated containers and tagged values become plain Python data, recursively."""
from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.data import plain


class TaggedStr(str):
    pass


class LazyDict(dict):
    pass


class LazyList(list):
    pass


class TaggedInt(int):
    pass


def test_subclasses_become_the_builtin_types_all_the_way_down():
    value = LazyDict({TaggedStr("driver"): LazyList([TaggedStr("580"), TaggedInt(3), True, None, (1.5, b"x")])})
    out = plain(value)
    assert out == {"driver": ["580", 3, True, None, [1.5, b"x"]]}
    assert out.__class__ is dict and next(iter(out)).__class__ is str
    items = out["driver"]
    assert items.__class__ is list and items[0].__class__ is str and items[1].__class__ is int and items[2] is True
    assert items[4].__class__ is list


def test_a_bool_stays_a_bool_and_unknown_values_pass_through():
    marker = object()
    assert plain(True) is True and plain(False) is False
    assert plain(marker) is marker
