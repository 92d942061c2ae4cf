"""Converter environments: built per release (or from a source tree) with uv or pip, recorded file
by file and checked before use; the machine's package sources and releases discovered on them.
"""
