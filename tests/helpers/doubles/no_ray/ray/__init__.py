# Test double: stands for a machine without the `ray` extra. A test puts its folder first on
# PYTHONPATH, so `import ray` fails as it does where the extra is not installed.
raise ImportError("No module named 'ray' (test double: the ray extra is not installed)")
