"""instore: a study in a box of how grid storage serves ROOT analysis I/O."""

__version__ = "0.1.0"
