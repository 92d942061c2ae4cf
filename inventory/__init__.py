"""inventory: does a new coreai-torch release change the bundles you already shipped?"""
