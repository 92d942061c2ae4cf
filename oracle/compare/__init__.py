"""What a comparison is and what it finds: the probe spec, IR normalisation, output statistics and
the plain result types the store keeps.
"""
