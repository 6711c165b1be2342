"""The command line: ``main`` (click) with its commands, and ``view``."""
