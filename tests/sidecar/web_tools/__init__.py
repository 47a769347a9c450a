"""Tests of the web tools (a package so its module names do not clash with tests/sandbox)."""
