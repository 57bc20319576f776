"""Worked examples: ``delay_gradient`` (a Python congestion controller, docs/python-controllers.md)."""
