"""Framework adapters. Each module imports its framework when it is itself
imported, never before:

- ``taugrid.integrations.huggingface``: transformers' ``Trainer``
- ``taugrid.integrations.lightning``: ``lightning.pytorch``
"""
