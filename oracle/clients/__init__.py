"""The main process's side of the in-environment scripts: one long-lived worker per environment,
pooled, and the client of each script.
"""
