"""Code a hostile ``run_code`` program uses to get past the import guard (which is not the boundary).

Shared by the attack tests of ``run_code`` (``tests/sidecar/run_code/test_run_code.py``) and of the deny-read
set (``tests/sandbox/test_deny_read_moves.py``): the OS sandbox must hold whatever the program
reaches this way.
"""

GET_OS = """
def get_os():
    for cls in ().__class__.__base__.__subclasses__():
        found = getattr(getattr(cls, "__init__", None), "__globals__", {})
        if "sys" in found:
            return found["sys"].modules["_frozen_importlib"].__import__("os")
os = get_os()
"""
"""Defines ``os`` in the program without an ``import`` statement, from a subclass's globals."""
