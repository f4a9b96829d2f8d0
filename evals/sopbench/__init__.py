"""SOP-Bench (amazon-science/SOP-Bench, CC BY-NC 4.0, evaluation only): adapter, agents, metrics, runs.

The data is read from a folder the user gives (``--data`` or ``SOPBENCH_DATA``); nothing of it
is copied into the project.
"""
